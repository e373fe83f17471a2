/* cke.h — the stable C API of CKE: load a GGUF model, compile it for this CPU, evaluate.
 *
 *   cke_engine* e = cke_engine_load("model.gguf", NULL);
 *   if (!e) { fprintf(stderr, "%s\n", cke_last_error()); ... }
 *   int32_t ids[256]; int32_t n = cke_tokenize(e, "Once upon a time", 1, ids, 256);
 *   float* logits = malloc(sizeof(float) * cke_n_vocab(e));
 *   cke_eval(e, ids, n, logits);   // logits of the last token
 *   ...
 *   cke_engine_free(e);
 *
 * Errors: functions return NULL / a negative value and cke_last_error() (thread-local)
 * says why. No function aborts on bad input. */
#ifndef CKE_H
#define CKE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cke_engine cke_engine;

typedef struct cke_options {
  int32_t n_ctx;      /* 0: the model's context, at most 4096 */
  int32_t n_batch;    /* 0: 256 */
  int32_t n_threads;  /* 0: physical cores */
  const char* isa;    /* NULL: as probed; else "scalar", "avx2", "avx512", ... */
} cke_options;

/* The message of the last failed call on this thread ("" if none). */
const char* cke_last_error(void);

cke_engine* cke_engine_load(const char* model_path, const cke_options* options);
void cke_engine_free(cke_engine* e);

int32_t cke_n_vocab(const cke_engine* e);
int32_t cke_n_ctx(const cke_engine* e);
int32_t cke_pos(const cke_engine* e); /* tokens in the KV cache */

/* Token ids of `text` (BOS as the vocabulary says when add_special). Returns the count, or
 * -(needed) when `capacity` is too small, or INT32_MIN on error. */
int32_t cke_tokenize(const cke_engine* e, const char* text, int add_special, int32_t* ids,
                     int32_t capacity);
/* The bytes of one token, NUL-terminated into buf; returns the length or -(needed). */
int32_t cke_token_to_piece(const cke_engine* e, int32_t id, char* buf, int32_t capacity);
int cke_is_eog(const cke_engine* e, int32_t id);

/* Evaluates n tokens at positions pos..pos+n-1 (appending to the KV cache) and writes the
 * logits of the last one (n_vocab floats) to `logits` (may be NULL). 0 on success. */
int cke_eval(cke_engine* e, const int32_t* ids, int32_t n, float* logits);
/* Forgets cache cells at and after pos. */
void cke_rewind(cke_engine* e, int32_t pos);

#ifdef __cplusplus
}
#endif
#endif /* CKE_H */
