/* simple.c — embed CKE through its C API: load, compile, greedy-generate.
 *
 *   cke-example-simple MODEL.gguf "Once upon a time" 32
 */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/capi/cke.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL.gguf PROMPT [N]\n", argv[0]);
    return 2;
  }
  const int n_predict = argc > 3 ? atoi(argv[3]) : 32;
  cke_tune_process_heap();           /* optional: a faster compile (cke.h) */
  cke_options opt = {0, 0, 1, NULL}; /* default context and batch, 1 thread, probed ISA */
  cke_engine* e = cke_engine_load(argv[1], &opt);
  if (!e) {
    fprintf(stderr, "error: %s\n", cke_last_error());
    return 1;
  }
  int32_t ids[512];
  int32_t n = cke_tokenize(e, argv[2], 1, ids, 512);
  if (n <= 0) {
    fprintf(stderr, "error: prompt does not tokenize into 1..512 tokens\n");
    cke_engine_free(e);
    return 1;
  }
  const int32_t n_vocab = cke_n_vocab(e);
  float* logits = malloc(sizeof(float) * (size_t)n_vocab);
  int rc = cke_eval(e, ids, n, logits);
  printf("%s", argv[2]);
  for (int i = 0; rc == 0 && i < n_predict; ++i) {
    int32_t best = 0; /* greedy: the first maximum */
    for (int32_t v = 1; v < n_vocab; ++v)
      if (logits[v] > logits[best]) best = v;
    if (cke_is_eog(e, best)) break;
    char piece[256];
    if (cke_token_to_piece(e, best, piece, sizeof piece) >= 0) printf("%s", piece);
    rc = cke_eval(e, &best, 1, logits);
  }
  printf("\n");
  if (rc != 0) fprintf(stderr, "error: %s\n", cke_last_error());
  free(logits);
  cke_engine_free(e);
  return rc == 0 ? 0 : 1;
}
