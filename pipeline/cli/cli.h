/* What the ttapipe subcommands share. The command is a client of ttapipe.h alone. */
#ifndef TTP_CLI_H
#define TTP_CLI_H

#include <stdio.h>

#include "args.h"
#include "ttapipe.h"

/* Exit codes of the ttapipe command. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FATAL = 1, CLI_EXIT_SOME_FAILED = 3 };

/* The options of every subcommand that opens a model, for its option table. */
#define CLI_PIPELINE_OPTIONS                                                                   \
  {"model", "PATH", "model: a directory in the mnistCUDNN layout or an ONNX file (required)"},   \
      {"mean", "M[,M,M]", "input scaling: the network sees (pixel/255 - mean) / std, one value "  \
                          "or one a channel (default: the model's own, else 0)"},              \
      {"std", "S[,S,S]", "input scaling's std, given with --mean (default: the model's, else 1)"}, \
      {"engine", "NAME", "auto|cpu|cudnn|fused (default auto: the best that runs the model)"},      \
      {"precision", "P", "fp32|fp16|tf32: the GPU engine's precision (default fp32; tf32: "   \
                         "cudnn only)"},                                                      \
      {"batch", "B", "images per GPU batch, 1..65536 (default 1024)"},                        \
      {"slots", "K", "pinned transfer slots of the GPU engine, 2..16 (default 3; classify 8)"}, \
      {"no-graph", NULL, "launch each GPU batch eagerly instead of replaying a CUDA Graph"},  \
      {"wait", "MODE", "auto|spin|yield|block: how calls wait for the GPU (default auto)"},  \
      {"plan", "MODE", "measure|heuristic: how the cudnn engine picks convolution algorithms " \
                       "(default measure: cuDNN's timed search; heuristic runs nothing, the "  \
                       "default of classify under mpirun)"},                                    \
      {"plan-cache", "FILE", "off|FILE: where the cudnn engine keeps the algorithms its search "  \
                             "chose, so that later runs open without searching (default "       \
                             "$XDG_CACHE_HOME/ttapipe/plans, else ~/.cache/ttapipe/plans)"},    \
      {"device", "D", "CUDA device index (default 0)"},                                       \
      {"devices", "LIST", "all|D,D,...: several GPUs of one model behind one pipeline, up to 8 " \
                          "(default: --device alone; algorithms by the heuristic)"},            \
      {"verbose", NULL, "describe on stderr how the engine runs and where opening it went"},  \
      {"threads", "N", "threads of the CPU engine (default: one per core)"},                  \
      {"tta-policy", "FILE", "the augmentation from a policy file (README: TTA policies; the "  \
                             "--tta options below override its fields)"},                      \
      {"tta", "N", "classify each image as N augmented copies, 1..64 (default 1: none)"},     \
      {"tta-shift", "S", "largest shift of a copy, in pixels (default 2)"},                   \
      {"tta-contrast", "LO,HI", "range of a copy's contrast factor (default 0.85,1.15)"},     \
      {"tta-brightness", "LO,HI", "range of a copy's brightness offset (default -0.05,0.05)"}, \
      {"tta-noise", "A", "noise amplitude, or standard deviation if gaussian (default 0.04)"}, \
      {"tta-noise-kind", "KIND", "uniform|gaussian (default uniform)"},                       \
      {"tta-flip-h", "P", "probability that a copy is mirrored left-right, 0..1 (default 0; "  \
                          "for clothes and natural images, not digits)"},                      \
      {"tta-flip-v", "P", "probability that a copy is mirrored upside down, 0..1 (default 0)"}, \
      {"tta-rotate", "DEG", "largest rotation of a copy, 0..180 degrees (default 0)"},          \
      {"tta-scale", "LO,HI", "range of a copy's zoom about the centre, 0.25..4 (default 1,1)"},  \
      {"tta-translate", "T", "largest sub-pixel translation on top of the shift, 0..16 "        \
                             "(default 0)"},                                                   \
      {"tta-edge", "MODE", "zero|replicate|reflect: what a moved copy takes in at its edges "   \
                           "(default zero)"},                                                  \
      {"tta-views", "LIST", "a list of views instead of drawn ones, as 'none; flip_h; shift 1 0' " \
                            "(words: none flip_h flip_v rotate DEG scale K shift DX DY crop "   \
                            "POS F); sets --tta to their number"},                               \
      {"no-tta-original", NULL, "augment copy 0 too (by default it is the image as it is)"},  \
      {"no-tta-clamp", NULL, "leave augmented pixels unclamped (by default clamped to [0,1])"}, \
      {"seed", "S", "seed of the augmentation, 0..2^64-1 (default 0)"},                       \
      {"merge", "MODE", "mean|vote|max|gmean|logits: how the copies' outputs merge (default "  \
                        "mean; logits, the softmax of the mean logits, is gmean)"},            \
      {"tta-weights", "W,W,...", "each copy's weight in the merge (sets --tta to their number; " \
                                 "default: alike)"},                                             \
      {"tta-temperature", "T", "softmax temperature after the merge, 0.01..100 (default 1: "  \
                               "none; tune fits one)"}

/* How image files become the model's input (ttp_load_image's options): classify's, and eval's
   and tune's for a directory of labelled images. */
#define CLI_IMAGE_OPTIONS                                                                      \
  {"invert", "MODE", "auto|yes|no: make strokes light on black (default auto: invert when "    \
                     "the border is light)"},                                                  \
      {"center", "MODE", "none|mnist: resize the whole image, or crop to the ink, fit 20x20 "  \
                         "and centre its mass, as MNIST was made (default none)"},             \
      {"max-size", "WxH", "refuse images larger than this, up to 8192x8192 (the default)"},     \
      {"max-pixels", "N", "refuse images of more pixels than this, as 50M (the default) or a "   \
                          "number, up to 8192x8192"},                                            \
      {"full-size", NULL, "decode every image at its full size (by default one 16 times the "   \
                          "model's input or more is decoded at a reduced size)"}

/* The CLI_IMAGE_OPTIONS into *o (the library's defaults where not given). Returns CLI_EXIT_OK or
   a usage error. */
int cli_image_options(const cli_args* a, ttp_image_options* o);

/* The --wait and --plan names, in ttp_wait's and ttp_plan's order, NULL-terminated. */
extern const char* const cli_wait_names[];
extern const char* const cli_plan_names[];
/* The --engine names and their values, NULL-terminated names. */
extern const char* const cli_engine_names[];
extern const ttp_engine cli_engine_ids[];
/* The engine named `name` (not "auto") into *id; 0 if there is none of that name. */
int cli_engine_id(const char* name, ttp_engine* id);
/* Whether the engine named `name` runs on the CPU (cpu, onednn): no CUDA call for it. NULL (no
   --engine, so auto): 0. */
int cli_engine_on_host(const char* name);
/* The name of the engine p opened (its description's first word), as cli_engine_names spells
   it; "auto" if none matches. */
const char* cli_opened_engine(const ttp_pipeline* p);
/* Whether pipeline p (NULL: none opened) runs on a GPU engine. */
int cli_pipeline_on_gpu(const ttp_pipeline* p);

/* --precision (one of ttp_precision_name's names) into *p, left as it is when not given.
   Returns CLI_EXIT_OK or a usage error. */
int cli_get_precision(const cli_args* a, ttp_precision* p);

/* --devices: "all" (every GPU this process sees) or D,D,... (up to 8), into devices[0..*count);
   *count 0 when not given. Returns CLI_EXIT_OK or a usage error. */
int cli_get_devices(const cli_args* a, int* devices, int* count);

/* What a subcommand opens its pipeline with where the arguments say nothing: slots (--slots)
   and batch (--batch), 0 for the library's defaults; the plan (--plan); the device (--device);
   whether its graphs are captured on each bucket's first batch (ttp_options.lazy_graphs); and
   whether its engine opens behind ttp_open (ttp_options.open_behind: --verbose's account of the
   opening is then cli_print_opening's, once it is open). */
typedef struct cli_pipeline_defaults {
  int slots, batch;
  ttp_plan plan;
  int device;
  int lazy_graphs;
  int behind;
} cli_pipeline_defaults;

/* --verbose's account of an open pipeline: its engine, and where the opening's time went. */
void cli_print_opening(ttp_pipeline* p);

/* Opens the pipeline the CLI_PIPELINE_OPTIONS describe, with d's defaults where the arguments
   give nothing; *tta receives the augmentation asked for. Returns
   CLI_EXIT_OK with *p open, or the exit code after printing why (CLI_EXIT_USAGE, also for
   settings the library finds out of range, or CLI_EXIT_FATAL). */
int cli_open_pipeline(const cli_args* a, cli_pipeline_defaults d, ttp_pipeline** p,
                      ttp_tta* tta);
/* A pass over n images with the pipeline the arguments describe but the augmentation tta: its
   results (NULL: not kept), probabilities (NULL: none) and uncertainty measures (NULL: none).
   eval's copy 0 alone and its mean of a vote's copies, tune's candidates. Returns CLI_EXIT_OK or the exit code after printing why. */
int cli_classify_tta(const cli_args* a, ttp_plan default_plan, const ttp_tta* tta,
                     const uint8_t* images, size_t n, ttp_result* results, float* probs,
                     ttp_uncertainty* uncertainty);

/* Whether t weighs its copies in the merge (any weight not 0). */
int cli_tta_weighted(const ttp_tta* t);

/* One line describing the augmentation: "5 copies (copy 0 as it is), shift 2 px, ...". */
void cli_describe_tta(const ttp_tta* t, char* buf, size_t size);

/* Prints "ttapipe: message" to stderr and returns CLI_EXIT_FATAL. */
int cli_fail(const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Seconds on a monotonic clock. */
double cli_now(void);
/* cli_now() when main began: the origin of --verbose's account of a run's wall time. */
extern double cli_started;

extern const cli_command cli_eval, cli_classify, cli_info, cli_bench, cli_merge, cli_tune;

#endif
