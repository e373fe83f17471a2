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

/* Every function of the API carries CKE_API: the one set of symbols libcke.so exports
 * (-DCKE_SHARED=ON compiles everything else with hidden visibility). */
#if defined(__GNUC__)
#define CKE_API __attribute__((visibility("default")))
#else
#define CKE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cke_engine cke_engine;

typedef struct cke_options {
  int32_t n_ctx;     /* 0: the model's context, at most 4096 */
  int32_t n_batch;   /* 0: 256 */
  int32_t n_threads; /* 0: physical cores */
  const char* isa;   /* NULL: as probed; else "scalar", "avx2", "avx512", ... */
} cke_options;

/* The message of the last failed call on this thread ("" if none). */
CKE_API const char* cke_last_error(void);

/* Optional, once, before the first load: glibc's heap keeps blocks up to 64 MiB and the
 * memory freed (up to 256 MiB) for reuse, and part of it is advised to transparent huge
 * pages, which halves a compile on a virtual machine (its page faults were a quarter of it).
 * It changes malloc for the whole process, so it is the application's choice; the cke
 * command-line tools make it. Does nothing on another libc. */
CKE_API void cke_tune_process_heap(void);

CKE_API cke_engine* cke_engine_load(const char* model_path, const cke_options* options);
CKE_API void cke_engine_free(cke_engine* e);

CKE_API int32_t cke_n_vocab(const cke_engine* e);
CKE_API int32_t cke_n_ctx(const cke_engine* e);
CKE_API int32_t cke_pos(const cke_engine* e); /* tokens in the KV cache */

/* Token ids of `text` (BOS as the vocabulary says when add_special). Returns the count, or
 * -(needed) when `capacity` is too small, or INT32_MIN on error. */
CKE_API int32_t cke_tokenize(const cke_engine* e, const char* text, int add_special, int32_t* ids,
                             int32_t capacity);
/* The bytes of one token, NUL-terminated into buf; returns the length or -(needed). */
CKE_API int32_t cke_token_to_piece(const cke_engine* e, int32_t id, char* buf, int32_t capacity);
CKE_API int cke_is_eog(const cke_engine* e, int32_t id);

/* Evaluates n tokens at positions pos..pos+n-1 (appending to the KV cache) and writes the
 * logits of the last one (n_vocab floats) to `logits` (may be NULL). 0 on success. */
CKE_API int cke_eval(cke_engine* e, const int32_t* ids, int32_t n, float* logits);
/* Forgets cache cells at and after pos. */
CKE_API void cke_rewind(cke_engine* e, int32_t pos);

/* ---- Sessions: generation with sampling, stop strings and KV prefix reuse ----
 *
 *   cke_session* s = cke_session_new(e);            // takes over e's KV cache
 *   cke_generate_params p; cke_generate_params_default(&p);
 *   p.temperature = 0; p.max_tokens = 32;
 *   cke_generate_result r;
 *   if (cke_session_generate(s, "Once upon a time", &p, on_text, NULL, &r) != 0) ...
 *   cke_session_free(s);
 *
 * A prompt is evaluated only from where it stops agreeing with what the KV cache holds from
 * the previous call. One session per engine at a time (the engine has one KV cache); after a
 * cke_eval or cke_rewind on the engine the session starts over from an empty cache. */
typedef struct cke_session cke_session;

typedef struct cke_generate_params {
  float temperature;       /* 0: greedy */
  int32_t top_k;           /* <= 0: off */
  float top_p;             /* >= 1: off */
  float min_p;             /* <= 0: off */
  float repeat_penalty;    /* 1: off */
  float presence_penalty;  /* 0: off */
  float frequency_penalty; /* 0: off */
  int32_t repeat_last_n;   /* window of the penalties */
  uint64_t seed;           /* 0xFFFFFFFF: random */
  int32_t max_tokens;      /* -1: until end of generation or of the context */
  const char* const* stop; /* n_stop stop strings (may be NULL when n_stop is 0) */
  int32_t n_stop;
} cke_generate_params;

/* llama.cpp's defaults: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, no penalties. */
CKE_API void cke_generate_params_default(cke_generate_params* p);

enum cke_finish_reason {
  CKE_FINISH_STOP = 0,     /* a stop string */
  CKE_FINISH_EOS = 1,      /* an end-of-generation token */
  CKE_FINISH_LENGTH = 2,   /* max_tokens */
  CKE_FINISH_CONTEXT = 3,  /* the context is full */
  CKE_FINISH_CANCELLED = 4 /* the callback returned 0 */
};

typedef struct cke_generate_result {
  int32_t finish_reason; /* enum cke_finish_reason */
  int32_t prompt_tokens;
  int32_t cached_tokens; /* prompt tokens the cache already held */
  int32_t completion_tokens;
  double prompt_ms;
  double generate_ms;
} cke_generate_result;

/* Called with each piece of generated text (len bytes, NUL-terminated; token is -1 for text
 * held back until the end). Return nonzero to go on, 0 to cancel. */
typedef int (*cke_text_callback)(void* user, int32_t token, const char* text, int32_t len);

/* NULL (and cke_last_error) when e is NULL. The engine must outlive the session. */
CKE_API cke_session* cke_session_new(cke_engine* e);
CKE_API void cke_session_free(cke_session* s);
/* Generates after `prompt` (tokenized with BOS as the vocab says). 0 on success; -1 and
 * cke_last_error() on bad arguments, an engine error or a prompt longer than the context.
 * `callback` and `result` may be NULL. */
CKE_API int cke_session_generate(cke_session* s, const char* prompt,
                                 const cke_generate_params* params, cke_text_callback callback,
                                 void* user, cke_generate_result* result);

#ifdef __cplusplus
}
#endif
#endif /* CKE_H */
