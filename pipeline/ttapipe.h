/* ttapipe.h — classify small grayscale images in bulk with a LeNet-class CNN.
 *
 * ttapipe runs a small convolutional network (NVIDIA's mnistCUDNN LeNet and networks like it)
 * over 28x28 8-bit grey images and returns, for each image, the most probable class and the
 * softmax probabilities. This header is the whole public interface: the `ttapipe` command is
 * written against it and nothing else.
 *
 * Usage (error handling shortened to one line each):
 *
 *     ttp_options o;
 *     ttp_options_init(&o);
 *     o.model_dir = "models/lenet-mnist";              // a directory in the mnistCUDNN layout
 *     ttp_pipeline* p = NULL;
 *     if (ttp_open(&o, &p) != TTP_OK) { fprintf(stderr, "%s\n", ttp_last_error(p)); ttp_close(p); return 1; }
 *     ttp_result r[2];
 *     uint8_t pixels[2 * 28 * 28];                     // two images, rows top first, 0 = black
 *     ...
 *     if (ttp_classify(p, pixels, 2, r, NULL) != TTP_OK) fprintf(stderr, "%s\n", ttp_last_error(p));
 *     printf("%s %.4f\n", ttp_class_label(p, r[0].class_index), r[0].probability);
 *     ttp_close(p);
 *
 * Threading: a pipeline is used by one thread at a time (it may start worker threads of its own
 * inside a call); distinct pipelines are independent, also on the same GPU. Functions that take
 * no pipeline are safe to call from any thread.
 * The onednn engine's workers are OpenMP's (libgomp, oneDNN's runtime): its calls set the calling
 * thread's OpenMP thread count (omp_set_num_threads) to the pipeline's `threads`, and a program
 * with OpenMP work of its own shares that pool.
 *
 * CUDA state (GPU engines): ttp_open, ttp_classify and ttp_close make the pipeline's device
 * current while they run and give the calling thread back its own current device before they
 * return. They use that device's primary context and create their own streams, events, cuDNN
 * handles and memory, all released by ttp_close. The library never calls
 * cudaDeviceReset, cudaDeviceSynchronize or cudaSetDeviceFlags and never touches the caller's
 * streams or memory: its work runs on its own non-blocking streams, ordered by its own events,
 * and it waits on nothing but those events. The one exception is ttp_classify_device, which
 * takes the caller's device memory and stream on purpose: it records one event on that stream
 * and makes that stream wait for one of its own (see "Device inputs"), nothing more.
 *
 * Memory: the library owns every pointer it returns that is marked "owned by the pipeline"; such
 * pointers stay valid until ttp_close. Buffers the reading functions allocate for the caller are
 * released with ttp_free. The library keeps no pointer to caller memory after a call returns.
 *
 * Errors: every function that can fail returns a ttp_status. Functions on a pipeline record a
 * one-line message in it (ttp_last_error); functions without a pipeline write it into a buffer
 * the caller passes (error, error_size; TTP_ERROR_SIZE bytes always suffice). A message about
 * bad input names the file and the problem; a failure inside the library also names the source
 * file and line. Messages are printable text (ttp_printable: control bytes and bytes that are
 * not UTF-8 written \xHH), whatever a file name or a file held. The library never prints and
 * never exits.
 *
 * Compatibility: status values never change meaning (new ones are appended); structs that the
 * caller fills carry their size (ttp_options.struct_size) so that new fields can be appended
 * without breaking callers compiled against an older header; structs the library returns by
 * pointer may grow at their end. The header is the same whatever the build options: a CPU-only
 * build returns TTP_ERR_NO_GPU where a GPU is required.
 */
#ifndef TTAPIPE_H
#define TTAPIPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ------------------------------------------------------------------------------ */

#define TTP_VERSION_MAJOR 0
#define TTP_VERSION_MINOR 1
#define TTP_VERSION_PATCH 0
#define TTP_VERSION_NUMBER (TTP_VERSION_MAJOR * 10000 + TTP_VERSION_MINOR * 100 + TTP_VERSION_PATCH)
#define TTP_QUOTE_(x) #x
#define TTP_QUOTE(x) TTP_QUOTE_(x)
#define TTP_VERSION_STRING \
  TTP_QUOTE(TTP_VERSION_MAJOR) "." TTP_QUOTE(TTP_VERSION_MINOR) "." TTP_QUOTE(TTP_VERSION_PATCH)

/* The version of the library actually linked: TTP_VERSION_NUMBER of its own header. */
unsigned    ttp_version_number(void);
/* "0.1.0"; static text, never NULL. */
const char* ttp_version_string(void);

/* ---- Status ------------------------------------------------------------------------------- */

typedef enum ttp_status {
  TTP_OK = 0,
  TTP_ERR_INVALID_ARGUMENT = 1, /* a NULL where a pointer is required, a value out of its range */
  TTP_ERR_OUT_OF_MEMORY = 2,    /* host or device memory could not be allocated */
  TTP_ERR_IO = 3,               /* a file could not be opened or read */
  TTP_ERR_FORMAT = 4,           /* a file's contents break its format: size, magic, values */
  TTP_ERR_MODEL = 5,            /* a model's layers do not fit each other or the input */
  TTP_ERR_NO_GPU = 6,           /* a GPU is required and there is none (or a CPU-only build) */
  TTP_ERR_CUDA = 7,             /* the CUDA runtime failed */
  TTP_ERR_CUDNN = 8,            /* cuDNN failed */
  TTP_ERR_CUBLAS = 9,           /* cuBLAS failed (no longer returned: no engine uses it) */
  TTP_ERR_INTERNAL = 10,        /* a state the library should never reach: please report it */
  TTP_ERR_CANCELLED = 11,       /* ttp_cancel stopped the call: what it had finished is kept */
  TTP_ERR_GPU_LOST = 12         /* the GPU failed in a way CUDA cannot recover from within the
                                   process (a kernel's fault, a lost device): the call's batches
                                   not yet collected are lost, and the pipeline refuses every
                                   later call with this status; close it, and restart the
                                   process to use the GPU again */
  /* Values are stable once released: append, never reorder. */
} ttp_status;

/* "ok", "invalid argument", ...; static text, never NULL (also for unknown values). */
const char* ttp_status_string(ttp_status s);

/* Buffer size that always holds a whole message (the functions without a pipeline). */
#define TTP_ERROR_SIZE 1024

/* Makes text printable, as the library's messages are: each byte of a control character (C0
   0x00-0x1f, DEL 0x7f, C1 U+0080..U+009F, which some terminals obey, as UTF-8 c2 80..c2 9f) and
   each byte that is not part of valid UTF-8 is written \xHH (lowercase hex); the rest (printable
   UTF-8: "é", "数") is kept, and text printable already comes back unchanged. Lossy where the
   text holds "\x" itself: it is for showing text (a program's messages on a terminal), not for
   storing it. Writes at most out_size bytes into out, NUL included, ending on a whole character
   or escape (out may be NULL when out_size is 0); returns the length of the whole escaped text,
   as snprintf does (at most 4 x strlen(text)). text NULL: "". Thread-safe. */
size_t ttp_printable(const char* text, char* out, size_t out_size);

/* ---- Test-time augmentation --------------------------------------------------------------- *
 * Each image is classified as N copies, each changed a little, and the N softmax outputs are
 * merged into one result. Copy c of an image (channels x rows x cols, pixel bytes I) is made so:
 *
 *   1. its parameters: dx, dy uniform integers in -shift..shift; contrast uniform in
 *      [contrast_min, contrast_max); brightness uniform in [brightness_min, brightness_max);
 *   2. for each channel and output pixel (y, x): x0 = I[y - dy][x - dx] / 255 (in float; 0 where
 *      that lies outside the image: the image moves right by dx and down by dy, black comes in;
 *      every channel moves alike);
 *   3. v = contrast * x0; v = v + brightness; v = v + n(y, x), each step rounded to float, with
 *      n uniform in [-noise, noise) or, for TTP_NOISE_GAUSSIAN, normal with standard deviation
 *      noise, drawn for each channel's pixel;
 *   4. v clamped to [0, 1] when clamp is set;
 *   5. the model's input scaling (ttp_options.normalize): v = (v - mean[c]) / std[c].
 *
 * Geometric views (any of flip_h, flip_v, rotate, translate nonzero, a scale other than 1, or
 * an edge other than TTP_EDGE_ZERO) replace step 2 for every copy but a kept original. Six more
 * uniforms u0..u5 (Philox blocks 1 and 2 of the parameters' purpose) give: mirror_x = -1 when
 * u0 < flip_h (else 1), mirror_y = -1 when u1 < flip_v; the angle as a turn t = -r + (2 r) u2,
 * r = rotate / 360 (plus 1 when negative, whose sine and cosine ttapipe computes itself, so that
 * CPU and GPU agree); the scale k = scale_min + (scale_max - scale_min) u3; the translation
 * tx = dx + (-translate + (2 translate) u4), ty likewise with u5. With the centre
 * (cx, cy) = ((cols - 1) / 2, (rows - 1) / 2), output pixel (y, x) reads the source point
 *     u = x - cx - tx,  v = y - cy - ty,
 *     sx = mirror_x (cos a / k) u + mirror_x (sin a / k) v + cx,
 *     sy = mirror_y (-sin a / k) u + mirror_y (cos a / k) v + cy
 * (each product and sum one float operation, in this order: augment/tta_core.h), and x0 is the
 * bilinear value of the four pixels around it, each first divided by 255 (P = I / 255):
 * (1 - wy)((1 - wx) P00 + wx P01) + wy((1 - wx) P10 + wx P11), wx = sx - floor(sx),
 * wy = sy - floor(sy). A pixel outside the image
 * reads 0 (TTP_EDGE_ZERO), the nearest edge pixel (TTP_EDGE_REPLICATE), or its mirror about the
 * edge pixel without repeating it (TTP_EDGE_REFLECT: -1 reads 1). The content turns clockwise
 * for a positive angle, grows for k > 1, and moves right and down by (tx, ty); mirrors flip it
 * about the centre. A view with no rotation, scale 1 and whole-pixel translation reads single
 * pixels, exactly. A crop (a listed view's crop F at (crop_x, crop_y)) is the zoom k = 1 / F
 * (computed as a float division) with its anchor at the image's side: tx = dx + ex (cols / 2),
 * ty = dy + ey (rows / 2), ex = -mirror_x crop_x (1 - F) / F and ey likewise, each worked out in
 * double and rounded to float once, the products and sums in float in this order.
 *
 * With keep_original (the default) copy 0 is the image itself: I / 255 (then scaled), unchanged
 * and without noise. Every random number comes from Philox4x32-10 keyed by the seed, with a counter made of
 * a 64-bit hash of the image's pixels, the copy index c and the number's purpose: copy c of an
 * image is the same whatever batch, position, engine, thread count or machine it meets, so a
 * prediction is a function of (model, TTA settings, seed, image) alone. The GPU makes the same
 * copies bit for bit.
 *
 * The defaults of ttp_tta_init (with copies = 5) are the setting found best for hand-drawn
 * digits: shifts of up to 2 pixels, contrast 0.85..1.15, brightness -0.05..+0.05, uniform noise
 * of amplitude 0.04, mean of the softmax outputs. ttp_tta_init sets copies = 1: no augmentation. */

typedef enum ttp_merge {
  TTP_MERGE_MEAN = 0,  /* the mean of the N probability vectors (default) */
  TTP_MERGE_VOTE = 1,  /* majority of the copies' classes; ties go to the higher mean probability;
                          the probability vector is the share of votes */
  TTP_MERGE_MAX = 2,   /* each class's highest probability over the copies, normalised */
  TTP_MERGE_GMEAN = 3  /* geometric mean (probabilities floored at 1e-30), normalised: the mean
                          of the log-probabilities renormalised, which is the softmax of the
                          copies' mean logits (the merge of logits; "logits" in policies and
                          options) */
} ttp_merge;

typedef enum ttp_noise {
  TTP_NOISE_UNIFORM = 0, /* uniform in [-noise, noise) */
  TTP_NOISE_GAUSSIAN = 1 /* normal, standard deviation noise */
} ttp_noise;

typedef enum ttp_edge {
  TTP_EDGE_ZERO = 0,      /* black comes in (default) */
  TTP_EDGE_REPLICATE = 1, /* the nearest edge pixel */
  TTP_EDGE_REFLECT = 2    /* mirrored about the edge pixel, which is not repeated */
} ttp_edge;

/* One view of a list (ttp_tta.views): the image mirrored (flip_h left-right, flip_v upside
   down: 0 or 1), turned by rotate degrees (-180..180, clockwise for a positive angle), zoomed by
   scale (0.25..4) or cropped, and moved right by dx and down by dy pixels (-16..16, fractions
   allowed), read back as the geometric views above with fixed values in place of drawn ones. */
typedef struct ttp_view {
  int flip_h, flip_v;
  float rotate, scale, dx, dy;
  /* A crop: the part of F (0.25..1) of each side at (crop_x, crop_y) (-1 left or top, 0 the
     centre, 1 right or bottom) enlarged to the whole image, then mirrored and moved as above;
     0 (the default): none. Not with rotate or scale. */
  float crop;
  int crop_x, crop_y;
} ttp_view;

enum { TTP_MAX_VIEWS = 16, TTP_MAX_COPIES = 64 };

typedef struct ttp_tta {
  size_t struct_size;               /* sizeof(ttp_tta); set by ttp_tta_init */
  int copies;                       /* N, 1..64; 1 = no augmentation (default 1) */
  int keep_original;                /* copy 0 is the untouched image (default 1) */
  int shift;                        /* largest shift in pixels, 0..16 (default 2) */
  float contrast_min, contrast_max; /* 0 <= min <= max <= 16 (default 0.85, 1.15) */
  float brightness_min, brightness_max; /* -1 <= min <= max <= 1 (default -0.05, 0.05) */
  float noise;                      /* amplitude (uniform) or standard deviation (Gaussian), in
                                       units of full white, 0..1 (default 0.04) */
  ttp_noise noise_kind;             /* default TTP_NOISE_UNIFORM */
  int clamp;                        /* clamp pixels to [0, 1] (default 1) */
  uint64_t seed;                    /* default 0 */
  ttp_merge merge;                  /* default TTP_MERGE_MEAN */
  float temperature;                /* softmax temperature after the merge, 0.01..100 (default
                                       1: none): the merged vector q becomes q^(1/T) / sum
                                       q^(1/T), on the host as results are collected ("pool,
                                       then calibrate", Ashukha et al. 2020). The class, its
                                       spread and each copy's own softmax do not change; T > 1
                                       softens, T < 1 sharpens. `ttapipe tune` fits it. Not
                                       applied by ttp_classify_device, which refuses T != 1 */
  /* Geometric views (above); fields appended to the structure, so that a caller's older one
     (its struct_size) leaves them off. */
  float flip_h, flip_v;             /* probability of a left-right, an up-down mirror, 0..1
                                       (default 0); a horizontal mirror suits clothes and
                                       natural images, not digits */
  float rotate;                     /* largest rotation, 0..180 degrees (default 0) */
  float scale_min, scale_max;       /* zoom about the centre, 0.25 <= min <= max <= 4 (default
                                       1, 1): above 1 enlarges */
  float translate;                  /* largest sub-pixel translation, 0..16 pixels, on top of
                                       the whole-pixel shift (default 0) */
  ttp_edge edge;                    /* what enters from outside (default TTP_EDGE_ZERO) */
  /* A list of views instead of drawn ones (default none: view_count 0): copy c is views[c], and
     copies must equal view_count (ttp_tta_set_views sets both). The mirrors, rotation, scale,
     translation and shift above are then not drawn (flip_h .. translate must stay at their
     defaults); contrast, brightness, noise, the edge mode and keep_original (copy 0 the image
     as it is, whatever views[0]) apply as before. airbench's six views: "none; flip_h;
     shift 1 0; flip_h shift 1 0; shift -1 0; flip_h shift -1 0". */
  int view_count;
  ttp_view views[TTP_MAX_VIEWS];
  /* Each copy's weight in the merge: copies of them, each 0..1e6, not all 0, scaled to sum to 1
     (all 0, the default: every copy alike). airbench's six views weigh 2, 2, 1, 1, 1, 1. mean and
     gmean weigh each copy's term (gmean: the weighted mean of the log-probabilities), a vote
     counts each copy's weight, max takes the copies of weight above 0; the spread and the
     uncertainty measures weigh each copy so. Every engine takes them. */
  float weights[TTP_MAX_COPIES];
} ttp_tta;

/* Parses a list of views into t (views, view_count, and copies = their number): views separated
   by ';', each one or more of `none`, `flip_h`, `flip_v`, `rotate DEG`, `scale K`,
   `shift DX DY`, `crop POS F` (POS tl, tr, bl, br or c: a corner or the centre; ttach's five
   crops are "crop tl 0.875; crop tr 0.875; crop bl 0.875; crop br 0.875; crop c 0.875" with
   keep_original = 0, else copy 0 is the image as it is), separated by spaces. Returns TTP_OK, or TTP_ERR_INVALID_ARGUMENT with the
   reason in error (t unchanged). */
ttp_status ttp_tta_set_views(ttp_tta* t, const char* text, char* error, size_t error_size);

/* Fills t with the defaults above (copies = 1) and sets t->struct_size. */
void ttp_tta_init(ttp_tta* t);

/* ---- TTA policies: the augmentation as a text file ---------------------------------------- *
 * One `key = value` a line; '#' starts a comment; blank lines and spaces around are ignored;
 * every key at most once, and a key not given keeps its default (ttp_tta_init):
 *     copies = 5                  keep_original = yes      shift = 2
 *     contrast = 0.85, 1.15       brightness = -0.05, 0.05 noise = 0.04
 *     noise_kind = uniform        clamp = yes              seed = 0
 *     merge = mean                (mean, vote, max, gmean, or logits: gmean's other name)
 *     temperature = 1             (0.01..100: ttp_tta.temperature)
 *     flip_h = 0    flip_v = 0    rotate = 0    scale = 1, 1    translate = 0
 *     edge = zero                 (zero, replicate or reflect)
 *     views = none; flip_h        (ttp_tta_set_views' syntax; sets copies too)
 *     weights = 2, 1              (ttp_tta.weights, a number a copy; sets copies too)
 * the ranges of ttp_tta's fields. `ttapipe tune` writes them; classify, eval and bench take
 * --tta-policy FILE (their --tta-* options then override single fields). */

/* Reads the policy at path (at most 64 KiB of text) into *out (written only on success).
   Returns TTP_OK, TTP_ERR_IO, TTP_ERR_FORMAT (one line naming the file and the line: an
   unknown or repeated key, a value that does not parse, or a field out of its range),
   TTP_ERR_INVALID_ARGUMENT, TTP_ERR_OUT_OF_MEMORY. */
ttp_status ttp_read_tta_policy(const char* path, ttp_tta* out, char* error, size_t error_size);

/* Writes t as a policy file at path, every key given; comment (NULL: none) goes first, each of
   its lines as a comment line. Reading it back gives t's values exactly. Returns TTP_OK,
   TTP_ERR_IO, TTP_ERR_INVALID_ARGUMENT. */
ttp_status ttp_write_tta_policy(const char* path, const ttp_tta* t, const char* comment,
                                char* error, size_t error_size);

/* ---- Options and lifecycle ---------------------------------------------------------------- */

typedef struct ttp_pipeline ttp_pipeline; /* opaque */

typedef enum ttp_engine {
  TTP_ENGINE_AUTO = 0,  /* the best engine that supports the model and opens: fused, else cudnn,
                           where this build has GPU support and a GPU is usable, else onednn
                           where this build has it, else cpu (the description says why a better
                           one did not open) */
  TTP_ENGINE_CPU = 1,   /* the plain C reference engine; runs everywhere */
  TTP_ENGINE_CUDNN = 2, /* cuDNN and ttapipe's kernels on a GPU, each batch one CUDA Graph */
  TTP_ENGINE_RESERVED_3 = 3 /* was TTP_ENGINE_NAIVE: NVIDIA's sample's way of driving the
                           layers is a benchmark now (tests/bench/naive.c); ttp_open refuses it,
                           and the value is never reused */,
  TTP_ENGINE_FUSED = 4  /* ttapipe's own kernels on a GPU for LeNet-shaped models (README,
                           "Engines"): three launches for the whole augmented pass, each batch
                           one CUDA Graph; fp32 */,
  TTP_ENGINE_ONEDNN = 5 /* the fast CPU engine, on oneDNN (where this build has it: README,
                           "Engines"); fp32, within the reference's tolerance; auto takes it
                           where no GPU engine opens */
  /* Appended as engines arrive; values never change. */
} ttp_engine;

typedef enum ttp_precision {
  TTP_PRECISION_FP32 = 0, /* fp32 storage and arithmetic throughout (no TF32) */
  TTP_PRECISION_FP16 = 1, /* fp16 storage of weights and activations; convolutions and fully
                             connected layers on tensor cores with fp32 accumulation; pooling,
                             LRN, softmax computed in fp32 by cuDNN; the merge in double */
  TTP_PRECISION_TF32 = 2  /* the cudnn engine only: fp32 storage; convolutions and fully
                             connected layers on tensor cores in TF32 (each product's operands
                             rounded to 10 bits of mantissa, as fp16 has), fp32 accumulation;
                             everything else fp32 */
  /* Appended, never reordered. */
} ttp_precision;

/* "fp32", "fp16", "tf32": the name the command and the Python package use; static text, NULL
   for a value that is no precision. */
const char* ttp_precision_name(ttp_precision p);
/* The precision of that name into *p. Returns TTP_OK, or TTP_ERR_INVALID_ARGUMENT for a name
   that is none (*p unchanged). */
ttp_status ttp_precision_from_name(const char* name, ttp_precision* p);

/* How a call waits for its GPU batches (ttp_options.wait). Measured on an H100 (BENCHMARKS.md,
   "The latency path"): for a call of one image, polling and CUDA's own wait are within 2 us of
   each other, a sleeping wait takes 37 to 50 us longer. */
typedef enum ttp_wait {
  TTP_WAIT_AUTO = 0,  /* polls for small batches (up to 64 images: the latency path), CUDA's own
                         wait (cudaEventSynchronize under the device's scheduling flags) for the
                         others: the default */
  TTP_WAIT_SPIN = 1,  /* polls the GPU's progress without a pause: the lowest latency; the
                         waiting thread keeps a core busy */
  TTP_WAIT_YIELD = 2, /* polls, yielding the core to other threads between polls */
  TTP_WAIT_BLOCK = 3  /* sleeps until the GPU signals the batch done (blocking-sync events):
                         no core spent waiting, a longer latency */
} ttp_wait;

/* How the cudnn engine chooses its convolution algorithms (ttp_options.plan). Either way the
   choice is among cuDNN's implicit-GEMM algorithms (fp32: without tensor cores) that every batch
   bucket can run, made once per process and shape: the first pipeline of a process to plan a
   shape decides for every later one, so that an image gets the same bits in all of them. */
typedef enum ttp_plan {
  TTP_PLAN_MEASURE = 0,  /* times the algorithms at a canonical batch (cuDNN's search) and takes
                            the fastest: the default */
  TTP_PLAN_HEURISTIC = 1 /* takes cuDNN's heuristic ranking without running anything: opens
                            faster, and is what to use under compute-sanitizer, where the timed
                            search runs every algorithm under the tool on buffers nothing has
                            written yet */
} ttp_plan;

typedef struct ttp_options {
  size_t struct_size;    /* sizeof(ttp_options) as the caller compiled it; ttp_options_init sets it */
  const char* model_dir; /* a directory in the mnistCUDNN layout, or an ONNX file (a path that
                            ends in ".onnx"; see "Models"); required; read during ttp_open only */
  ttp_engine engine;     /* default TTP_ENGINE_AUTO */
  int threads;           /* threads of the CPU engines (cpu, onednn), 1..256; 0 (default) = one
                            per online core */
  const ttp_tta* tta;    /* test-time augmentation; NULL (default) = none. Read during ttp_open
                            only. */
  int device;            /* GPU engines: CUDA device index (default 0) */
  ttp_precision precision; /* GPU engines (default TTP_PRECISION_FP32); the CPU engines are
                              fp32 */
  int max_batch;         /* images per batch, 1..65536 (default 1024); the CPU engines take at
                            most 256. On a GPU a batch of fewer images is padded up to the
                            smallest bucket that holds it: 1, 8, 64, 512, 4096, 32768 below
                            max_batch, and max_batch itself */
  int slots;             /* GPU engines: pinned host slots in the transfer ring, 2..16 (default
                            3): while one batch computes, the next is copied in and the one
                            before copied out */
  int no_graph;          /* GPU engines: 1 = launch each batch eagerly instead of replaying its
                            captured CUDA Graph (default 0). The results are the same bits. */
  ttp_wait wait;         /* GPU engines: how calls wait for their batches (default
                            TTP_WAIT_AUTO). The results are the same bits. */
  ttp_plan plan;         /* cudnn engine: how it chooses its convolution algorithms (default
                            TTP_PLAN_MEASURE) */
  int normalize;         /* the input scaling: the network sees (v - mean[c]) / std[c] for each
                            channel c, v a pixel / 255 after the augmentation (and its clamp).
                            0 (default): the model's own (an ONNX file's metadata_props "mean"
                            and "std", see "Models"), else mean 0 and std 1. 1: mean and std
                            below (a grey model uses [0] only) */
  float mean[3], std[3]; /* with normalize = 1: each mean in -16..16, each std in 1e-6..1e6 */
  const int* devices;    /* GPU engines: 2..8 CUDA devices behind one pipeline (device_count of
                            them; read during ttp_open only), or NULL (default): `device` alone.
                            One runner on each GPU; a batch runs whole on one of them, dealt to
                            the GPU with the fewest batches in flight; results come in the
                            order of submission. Every GPU runs the algorithms the first one
                            chose, so the bits do not depend on the GPU; GPUs of different
                            models are refused. A device named twice gets two runners (tests
                            do it on one GPU). slots is per GPU (at most 16 / device_count).
                            ttp_classify_device is refused; ttp_bench_device splits its images
                            among the GPUs. */
  int device_count;
  const char* plan_cache; /* cudnn engine with TTP_PLAN_MEASURE: a file that keeps the
                             algorithms its timed search chose, for this GPU model, driver and
                             cuDNN, so that later pipelines and processes open without searching
                             and choose the same (the same bits in every process). Read when a
                             pipeline opens, written when it searched anything new; a file of
                             another GPU, driver or version, or damaged, is ignored (the
                             engine's description says so) and replaced. NULL (default):
                             $XDG_CACHE_HOME/ttapipe/plans, else $HOME/.cache/ttapipe/plans
                             (none where neither is set); "": no cache. Read during ttp_open
                             only. */
  int lazy_graphs;       /* GPU engines with graphs: 1 = capture each (slot, bucket)'s CUDA Graph
                            when its first batch runs, so that a job that uses few buckets opens
                            without capturing the others (the call that runs a pair's first
                            batch then allocates its graph); 0 (default): every graph at
                            ttp_open, so that no later call allocates. The same bits either
                            way. */
  int open_behind;       /* 1: ttp_open returns once the model is read and checked, and the
                            engine opens on a thread of its own (a GPU engine's start is hundreds
                            of ms: CUDA's, the plan's). ttp_classify_files and ttp_classify_paths
                            begin walking and decoding at once, into host memory (up to 128 MiB
                            of images), and hand those images to the engine when it is open;
                            every other call that needs the engine waits for it, and so does
                            ttp_wait_open. A failure to open is then the status of the first
                            call that needs the engine (its message as ttp_open's would have
                            been). Every engine's batch then holds max_batch images (the CPU
                            engines' too, which otherwise take at most 256). 0 (default): the
                            engine is open when ttp_open returns. */
} ttp_options;

/* Fills o with the defaults and sets o->struct_size. Call it before setting any field. */
void ttp_options_init(ttp_options* o);

/* Loads and checks the model and prepares the engine: everything that allocates happens here,
   none of it in ttp_classify (but a pair's CUDA Graph with lazy_graphs).
   *out receives a pipeline even when opening fails (it is NULL only if the pipeline itself could
   not be allocated), so that ttp_last_error can say why; call ttp_close on it in every case.
   Returns TTP_OK; TTP_ERR_INVALID_ARGUMENT for bad options (a TTA field out of its range
   included); TTP_ERR_IO, TTP_ERR_FORMAT or TTP_ERR_MODEL for the model directory;
   TTP_ERR_NO_GPU for TTP_ENGINE_CUDNN without a usable GPU (or in a CPU-only build);
   TTP_ERR_CUDA, TTP_ERR_CUDNN; TTP_ERR_OUT_OF_MEMORY. */
ttp_status ttp_open(const ttp_options* options, ttp_pipeline** out);

/* Waits until the engine is open (at once unless ttp_options.open_behind) and returns how its
   opening went: TTP_OK, or ttp_open's statuses, the message in ttp_last_error. */
ttp_status ttp_wait_open(ttp_pipeline* p);

/* Releases everything the pipeline holds (an engine still opening, once it is open). Accepts
   NULL and pipelines whose ttp_open failed. */
void ttp_close(ttp_pipeline* p);

/* One line on how the pipeline runs: engine, device, precision, TTA copies, batch buckets,
   whether CUDA Graphs are replayed and, if capture failed, why not. Owned by the pipeline; ""
   if ttp_open failed. */
const char* ttp_engine_description(const ttp_pipeline* p);

/* The message of the last failure on p, one line without a newline; "" after success.
   Owned by the pipeline, valid until its next call. Never NULL, also for p == NULL. */
const char* ttp_last_error(const ttp_pipeline* p);

/* ---- Models ------------------------------------------------------------------------------- *
 * A model directory holds NVIDIA's mnistCUDNN sample layout: raw little-endian float32 files
 * without header, each of exactly this size:
 *     conv1.bin 20x1x5x5, conv1.bias.bin 20, conv2.bin 50x20x5x5, conv2.bias.bin 50,
 *     ip1.bin 500x800 (row-major [output][input]), ip1.bias.bin 500, ip2.bin 10x500, ip2.bias.bin 10
 * and runs the sample's network on a 1x28x28 input scaled to [0,1] (pixel / 255):
 *     conv1 5x5 + bias -> maxpool 2x2/2 -> conv2 5x5 + bias -> maxpool 2x2/2 -> ip1 + bias -> relu
 *     -> lrn (n=5, alpha=1e-4, beta=0.75, k=1) -> ip2 + bias -> softmax
 * An optional labels.txt gives one class name per line (as many lines as classes). Missing,
 * short or over-long files and NaN or infinite weights are refused.
 * Or an ONNX file (README.md, "Models", has the table), or a directory holding model.onnx and no
 * .bin files: a graph (residual Adds, depthwise convolutions, Concat, squeeze-and-excitation,
 * channel shuffles) of the operators listed there, constants and shapes computed at load,
 * BatchNormalization folded where it can be, every weight in the file, on an input of 1 or 3
 * channels of TTP_MIN_SIDE to TTP_MAX_SIDE rows and columns (the batch may be dynamic); a
 * graph that ends in logits gets a softmax. Anything else is refused naming the node. Its
 * metadata_props may give "labels" (one a line), and "mean" and "std" (one number, or one a
 * channel, separated by commas): the input scaling of ttp_options.normalize.
 *
 * Pixels: images are planar everywhere (each image's channels one after the other, each plane's
 * rows top first); a byte p is the value p / 255, which the augmentation changes (every channel
 * shifted alike, each its own noise, clamped), then scaled. */

/* The input sizes ttapipe classifies: 1 or 3 channels of TTP_MIN_SIDE .. TTP_MAX_SIDE rows and
   columns. */
#define TTP_MIN_SIDE 8
#define TTP_MAX_SIDE 128

typedef struct ttp_model_info {
  int input_channels, input_rows, input_cols; /* the input image: 1 or 3 channels (planar: the
                                                 arrays of ttp_classify hold each image's
                                                 channels one after the other), 8..128 rows and
                                                 columns; 1 x 28 x 28 for a model directory */
  int classes;                                /* length of the probability vector */
  int layers;                                 /* ttp_layer(p, 0 .. layers-1) */
  long long parameters;                       /* weights and biases */
  double flops;                               /* per image and copy: 2 x multiply-adds of the
                                                 conv and fc layers (the rest is under 1%) */
  float input_mean[3], input_std[3];          /* the input scaling in use (ttp_options'
                                                 normalize); 0 and 1 when there is none */
  double activation_bytes;                    /* fp32 values of one copy as the CPU engines
                                                 keep them: a tensor no longer read gives its
                                                 room to later ones (planned at open) */
  double activation_sum_bytes;                /* the same if each tensor had its own room */
} ttp_model_info;

/* A network is a graph of layers (nodes) in an order where each follows the layers it reads:
   layer i reads the tensors inputs[0 .. input_count-1], each -1 (the input image) or the output
   of an earlier layer j; the last layer's output is the class probabilities. A chain (LeNet)
   has every layer read the one before it. */
typedef struct ttp_layer_info {
  const char* name;     /* "conv1", "pool1", ... (an ONNX node's name, its last 31 bytes) */
  const char* kind;     /* "conv", "maxpool", "relu", "fc", "add", "concat", ... */
  const char* detail;   /* parameters in words: "20x1x5x5 stride 1 pad 0" */
  int in_c, in_h, in_w; /* input tensor of one image: channels x rows x columns */
  int out_c, out_h, out_w;
  long long parameters;
  double flops;         /* as in ttp_model_info */
  int input_count;      /* the tensors it reads: 1, or 2 and more (add, concat, ...) */
  const int* inputs;    /* input_count of them: -1 the image, j >= 0 layer j's output; in_c,
                           in_h, in_w are inputs[0]'s shape */
} ttp_layer_info;

/* The open model. Owned by the pipeline; NULL if p has no model (ttp_open failed). */
const ttp_model_info* ttp_model(const ttp_pipeline* p);
/* Layer index (0 = the first). Owned by the pipeline; NULL if index is out of range. */
const ttp_layer_info* ttp_layer(const ttp_pipeline* p, int index);
/* The class's name from labels.txt, or its index in decimal when the model has none. Owned by
   the pipeline; NULL if class_index is out of range. */
const char* ttp_class_label(const ttp_pipeline* p, int class_index);

/* ---- Classifying -------------------------------------------------------------------------- */

/* One image's answer after the merge of its copies. This struct is frozen: new per-image outputs
   come through new calls. */
typedef struct ttp_result {
  int class_index;   /* the merged vector's most probable class, 0 .. classes-1 (the lowest index
                        on a tie), or the vote's winner */
  float probability; /* its merged probability, 0..1 */
  float spread;      /* the standard deviation of that class's probability across the augmented
                        copies of the image: an uncertainty; 0 with one copy */
} ttp_result;

/* Classifies count images. images: count x input_channels x input_rows x input_cols bytes, each
   image's planes one after the other, rows top first, 0 = black, 255 = white (grey models
   expect light strokes on a dark ground).
   results: count entries, written. probabilities: NULL, or count x classes floats, written with
   each image's merged probability vector. count may be 0. Deterministic: an image's result does
   not depend on count, on its position, or on the other images.
   Every engine runs behind the same streaming core: the images are copied, ttp_batch_capacity at a
   time, into the pipeline's own input slots (pinned host memory on a GPU), each
   batch started as soon as it is copied, so that on a GPU one batch's copy in, another's
   compute and a third's copy out overlap; results are collected in order into the caller's
   arrays. The call returns when every result is there: the caller's memory is read only during
   the call, and no work of the call is left running. Returns TTP_OK, TTP_ERR_INVALID_ARGUMENT,
   or an engine failure (recorded in p; on a GPU it names the batch and the call's images, e.g.
   "images 128..191 of this call: batch 7 of this pipeline (64 images): ..."). After a failure
   every result is either right or left as it was: none is wrong. TTP_ERR_GPU_LOST: the GPU
   failed in a way CUDA cannot recover from in the process; this call and every later one on the
   pipeline fail with it. */
ttp_status ttp_classify(ttp_pipeline* p, const uint8_t* images, size_t count, ttp_result* results,
                        float* probabilities);

/* An image's uncertainty beyond ttp_result's spread: measures to rank images by, to send the
   least certain to a human (`ttapipe eval` prints how well each ranks the model's mistakes).
   Frozen, as ttp_result. */
typedef struct ttp_uncertainty {
  float entropy;            /* of the merged probability vector as handed out (after the
                               temperature), in nats: 0 (certain) .. ln classes */
  float mutual_information; /* between the copies and the class: the entropy of the copies'
                               mean vector less the mean of the copies' own entropies, in nats
                               (BALD's, as for MC dropout): high where confident copies disagree;
                               0 with one copy; whatever the merge mode */
  float agreement;          /* the share of the copies whose own most probable class is the
                               result's class, 0..1 (1 with one copy) */
} ttp_uncertainty;

/* ttp_classify, and each image's ttp_uncertainty in uncertainty (count entries, required).
   probabilities may be NULL as for ttp_classify. The measures are computed in float beside the
   merge, on every engine (within a few ulp of each other). */
ttp_status ttp_classify_uncertainty(ttp_pipeline* p, const uint8_t* images, size_t count,
                                    ttp_result* results, float* probabilities,
                                    ttp_uncertainty* uncertainty);

/* What test-time augmentation does to one image, for reports and for looking: its copies as
   the network sees them and each copy's own prediction. image: as ttp_classify takes one.
   pixels: NULL, or copies x input_channels x input_rows x input_cols bytes, written with each
   copy as an image (its values before the input scaling, x 255, rounded and clamped to
   0..255: the copies of ttp_classify bit for bit before that rounding). probabilities: copies x
   classes floats, written with each copy's softmax output, in the order merged. copies is the
   pipeline's TTA copies (ttp_tta.copies). The copies go through the CPU reference engine
   whatever engine the pipeline runs (its probabilities are within that engine's tolerance of
   the reference, "Engines"), one copy at a time: meant for a few images (about 0.1 ms a copy
   for LeNet). Returns TTP_OK, TTP_ERR_INVALID_ARGUMENT, TTP_ERR_OUT_OF_MEMORY. */
ttp_status ttp_inspect_copies(ttp_pipeline* p, const uint8_t* image, uint8_t* pixels,
                              float* probabilities);

/* ---- Streaming batches ---------------------------------------------------------------------- *
 * The streaming core ttp_classify runs on, for callers who produce images a batch at a time and
 * want the GPU busy all along from one thread, without building one huge array: ttp_submit
 * starts a batch and returns at once; ttp_collect waits for the oldest batch submitted and
 * writes its results. Batches are collected in the order they were submitted, up to
 * ttp_batches_max(p) at a time in flight (the pipeline's slots): while one batch computes, the
 * next is copied in and the one before copied out, as inside one large ttp_classify call, and
 * the results are the same bits as ttp_classify's for the same images.
 *
 *   size_t n;
 *   while (have_images) {
 *     if (ttp_batches_in_flight(p) == ttp_batches_max(p))     // every slot busy: collect first
 *       ttp_collect(p, results + done, NULL, &n), done += n;
 *     ttp_submit(p, next_images, count);                      // count <= ttp_batch_capacity(p)
 *   }
 *   while (ttp_batches_in_flight(p) > 0) ttp_collect(p, results + done, NULL, &n), done += n;
 *
 * Ownership: ttp_submit copies the images into the pipeline's own input slot (pinned host
 * memory on a GPU) before it returns: the caller's buffer may be reused or freed at once. The
 * results and probabilities are written during ttp_collect only. While batches are in flight,
 * ttp_classify, ttp_classify_files and ttp_classify_paths refuse (TTP_ERR_INVALID_ARGUMENT):
 * collect them first. After a failed ttp_submit or ttp_collect every batch in flight is dropped
 * (ttp_batches_in_flight is 0 again); their results never come. */

/* The most images one batch may hold: max_batch on a GPU, max_batch up to 256 on the CPU; 0 if
   p is not open. */
size_t ttp_batch_capacity(const ttp_pipeline* p);
/* The most batches in flight at a time (the pipeline's slots); 0 if p is not open. */
int ttp_batches_max(const ttp_pipeline* p);
/* The batches submitted and not yet collected. */
int ttp_batches_in_flight(const ttp_pipeline* p);

/* Copies count images (1..ttp_batch_capacity(p); as ttp_classify takes them) into the next free
   slot and starts their batch; returns without waiting for it. Returns TTP_OK;
   TTP_ERR_INVALID_ARGUMENT when count is out of range or every slot is in flight (collect
   first); or an engine failure, as ttp_classify. */
ttp_status ttp_submit(ttp_pipeline* p, const uint8_t* images, size_t count);

/* Waits for the oldest batch in flight and writes its results: *count (required) receives the
   number of its images, results (required) that many entries, probabilities (NULL, or room for
   count x classes floats) their merged probability vectors. Returns TTP_OK;
   TTP_ERR_INVALID_ARGUMENT when nothing is in flight; or an engine failure (the failed batch
   named, as ttp_classify names it). */
ttp_status ttp_collect(ttp_pipeline* p, ttp_result* results, float* probabilities, size_t* count);

/* Whether the oldest batch in flight is done, so that ttp_collect would not wait; 0 when
   nothing is in flight. Never waits. */
int ttp_batch_ready(ttp_pipeline* p);

/* ---- Device inputs (GPU engines) ------------------------------------------------------------ *
 * For images that are already on the GPU (decoded by nvJPEG or DALI, made by a CUDA program):
 * no trip through the host. */

/* Classifies count images in device memory (as ttp_classify takes them, on the pipeline's
   device) and writes results (count entries) and probabilities (NULL, or count x classes
   floats) in device memory, ordered on the caller's CUDA stream `stream` (a cudaStream_t of the
   pipeline's device; 0 is the legacy default stream):
     - the work starts after everything enqueued on `stream` before the call (an event recorded
       on `stream`, waited for by the pipeline's own stream);
     - everything enqueued on `stream` after the call runs after the results are written (the
       caller's stream waits for an event of the pipeline's): synchronise `stream`, or enqueue on
       it, to use them;
     - nothing else is done to `stream`; the pipeline's device is current during the call, the
       caller's again when it returns.
   Returns once the work is enqueued, without waiting for the GPU: the images must stay
   unchanged and the result arrays allocated until `stream` has passed the call. The results are
   the same bits as ttp_classify's for the same images. A failure of the GPU while the work runs
   shows on the caller's stream (and on this pipeline's next call). Returns TTP_OK;
   TTP_ERR_INVALID_ARGUMENT for the CPU engine, missing arrays or batches of ttp_submit in
   flight; TTP_ERR_CUDA, TTP_ERR_GPU_LOST as ttp_classify. */
ttp_status ttp_classify_device(ttp_pipeline* p, const uint8_t* images, size_t count,
                               ttp_result* results, float* probabilities, void* stream);

/* ---- Reading inputs (no pipeline needed) -------------------------------------------------- *
 * On failure these write a one-line message naming the file into error (error_size bytes; error
 * may be NULL) and leave nothing allocated. Files are treated as hostile: sizes are checked
 * against the data actually present before anything is allocated for it. */

typedef struct ttp_images {
  uint8_t* pixels; /* count x channels x rows x cols bytes (planar); release with ttp_free */
  size_t count;
  int rows, cols;
  int channels;    /* 1, or 3 from a 4-dimensional file */
} ttp_images;

/* Upper bound on the pixel bytes of one IDX file: larger declarations are refused. */
#define TTP_IDX_MAX_BYTES ((size_t)1 << 34)

/* Reads an IDX image file, plain or gzip-compressed: magic 0x0803 (unsigned bytes, 3
   dimensions [count, rows, cols]: grey, as MNIST) or 0x0804 (4 dimensions [count, channels,
   rows, cols], channels 1 or 3, each image's planes one after the other).
   Refuses a wrong magic, zero or absurd dimensions, truncated data and trailing bytes.
   Returns TTP_OK, TTP_ERR_IO, TTP_ERR_FORMAT, TTP_ERR_OUT_OF_MEMORY, TTP_ERR_INVALID_ARGUMENT. */
ttp_status ttp_read_idx_images(const char* path, ttp_images* out, char* error, size_t error_size);

/* Reads an IDX label file (magic 2049: unsigned bytes, 1 dimension), plain or gzip-compressed,
   into *labels (count bytes; release with ttp_free). Same checks and returns as above. */
ttp_status ttp_read_idx_labels(const char* path, uint8_t** labels, size_t* count, char* error,
                               size_t error_size);

/* ---- Image files ---------------------------------------------------------------------------- *
 * ttp_load_image turns an image file into the model's input, in this order:
 *   1. the file is read whole (at most max_file_bytes); its format comes from its first bytes:
 *      PNG (ttapipe's own reader, with zlib; the CRC of every chunk it reads checked),
 *      JPEG (Debian's libjpeg-turbo; a file libjpeg warns about is refused), BMP or binary PNM
 *      (P5 grey, P6 colour; ttapipe's own readers); its declared size is checked against
 *      max_width x max_height and max_pixels before anything is decoded; images are never
 *      flipped. A file that cannot be decoded is refused with "unreadable image header (...)"
 *      or "corrupt image (...)" and the reason. An image at least 16 times the model's input in
 *      both directions is decoded at a reduced size that keeps at least 8 of its pixels for
 *      each of the input's, a side (unless full_size): JPEG at a DCT scale of n/8, the others
 *      averaged in boxes of f x f pixels as their rows are decoded (alpha-weighted, so that
 *      step 2 composites as it would at full size); the whole image is never in memory, and
 *      the model's input differs from full decoding's by a level or two at most (README.md,
 *      "Large images");
 *   2. to grey, in [0, 1]: colour by BT.601 luma (0.299 R + 0.587 G + 0.114 B), alpha composited
 *      over white (a transparent background is paper);
 *   3. polarity: the models expect light strokes on black. TTP_INVERT_AUTO inverts (1 - v) when
 *      the mean of the outermost ring of pixels is above 0.5, i.e. the background is light;
 *   4. size: TTP_CENTER_NONE resizes the whole image to rows x cols; TTP_CENTER_MNIST does what
 *      was done to MNIST: crop to the bounding box of the ink (pixels of 0.3 and above), scale it
 *      so that its longer side is 20 pixels (aspect kept), and place it in the rows x cols field
 *      with its centre of mass (pixel values as weights) at the centre. Shrinking averages areas;
 *      enlarging is bilinear;
 *   5. each pixel rounded to 0..255. */

typedef enum ttp_invert {
  TTP_INVERT_AUTO = 0, /* invert when the border is light (default) */
  TTP_INVERT_YES = 1,
  TTP_INVERT_NO = 2
} ttp_invert;

typedef enum ttp_center {
  TTP_CENTER_NONE = 0, /* resize the whole image (default) */
  TTP_CENTER_MNIST = 1 /* crop to the ink, fit 20 x 20, centre of mass at the centre */
} ttp_center;

typedef struct ttp_image_options {
  size_t struct_size;        /* sizeof(ttp_image_options); set by ttp_image_options_init */
  ttp_invert invert;         /* default TTP_INVERT_AUTO */
  ttp_center center;         /* default TTP_CENTER_NONE */
  int max_width, max_height; /* larger images are refused before decoding, 1..8192 (default
                                8192 x 8192) */
  size_t max_file_bytes;     /* larger files are refused unread (default 64 MiB) */
  int channels;              /* 1 (default): grey, as above; 3: planar RGB for a colour model
                                (step 2 keeps the colours, a grey file gives three equal planes;
                                step 3 inverts only with TTP_INVERT_YES; step 4 resizes each
                                plane: TTP_CENTER_MNIST is refused). ttp_classify_files sets it
                                from the model */
  uint64_t max_pixels;       /* images of more pixels (width x height) are refused before
                                decoding, 1..8192 x 8192 (default TTP_DEFAULT_MAX_PIXELS) */
  int full_size;             /* 1: decode every image at its full size; 0 (default): a large one
                                at a reduced size (step 1) */
} ttp_image_options;

/* 50 megapixels: the photographs of phones and most cameras (8160 x 6120), not an 8192 x 8192
   image whose file of a few hundred bytes asks for a gigabyte. */
#define TTP_DEFAULT_MAX_PIXELS ((uint64_t)50000000)

void ttp_image_options_init(ttp_image_options* o);

/* Loads the image file at path into pixels (channels x rows x cols bytes, each plane's rows top
   first; written only on success). options NULL: the defaults. Thread-safe.
   Returns TTP_OK, TTP_ERR_IO (cannot open or read; a directory), TTP_ERR_FORMAT (not an image
   of a known format, corrupt, too large), TTP_ERR_OUT_OF_MEMORY, TTP_ERR_INVALID_ARGUMENT. */
ttp_status ttp_load_image(const char* path, const ttp_image_options* options, int rows, int cols,
                          uint8_t* pixels, char* error, size_t error_size);

/* ---- File lists ----------------------------------------------------------------------------- */

typedef struct ttp_file_list {
  char** paths; /* count paths, each allocated; release the whole list with ttp_file_list_free */
  size_t count;
} ttp_file_list;

typedef struct ttp_list_options {
  size_t struct_size;     /* sizeof(ttp_list_options); set by ttp_list_options_init */
  int hidden;             /* also walk into and take names beginning with '.' (default 0) */
  const char* extensions; /* comma-separated, case-insensitive, without the first dot (one
                             may hold dots: "tar.gz"): the files a directory walk takes, and
                             the members taken from tar archives (default
                             "png,jpg,jpeg,bmp,pgm,ppm,pnm,tar,tar.gz,tgz") */
} ttp_list_options;

void ttp_list_options_init(ttp_list_options* o);

/* Appends to *list (which may hold paths already; start from {0}) each of the count paths:
   a directory is walked recursively, following symbolic links but never into a directory
   twice (loops are safe), and the files in it whose extension matches are appended in
   byte-wise sorted order; anything else is appended as given, whatever its extension (if it
   cannot be read, classifying it gives that file's error). Explicit paths are never filtered.
   Returns TTP_OK, TTP_ERR_OUT_OF_MEMORY, TTP_ERR_INVALID_ARGUMENT. */
ttp_status ttp_list_files(const char* const* paths, size_t count, const ttp_list_options* options,
                          ttp_file_list* list, char* error, size_t error_size);

/* Appends the paths listed in a file, one a line ('\n', a '\r' before it dropped), or separated
   by NUL bytes when nul_separated; "-" reads standard input. Empty entries are skipped; order is
   kept. A line holding a NUL byte (a NUL-separated list read as lines) is refused.
   Returns TTP_OK, TTP_ERR_IO, TTP_ERR_FORMAT, TTP_ERR_OUT_OF_MEMORY. */
ttp_status ttp_read_file_list(const char* path, int nul_separated, ttp_file_list* list,
                              char* error, size_t error_size);

void ttp_file_list_free(ttp_file_list* list); /* empties the list; accepts NULL */

/* Releases memory that a ttp_read_idx_* function allocated. Accepts NULL. */
void ttp_free(void* memory);

/* ---- Classifying files ---------------------------------------------------------------------- */

/* Called once per file, in the order of the paths, on the thread that called
   ttp_classify_files. result and probabilities (classes floats) are NULL when the file failed;
   error is then its one-line message, else NULL. The pointers are valid during the call only. */
typedef void (*ttp_file_callback)(void* user, size_t index, const char* path,
                                  const ttp_result* result, const float* probabilities,
                                  const char* error);

typedef struct ttp_bulk_stats {
  size_t struct_size; /* sizeof(ttp_bulk_stats), set by the caller */
  size_t files, classified, failed;
  int threads;               /* decoding threads used */
  double read_seconds;       /* reading files, summed over the decoding threads */
  double decode_seconds;     /* decoding them, summed over the threads */
  double preprocess_seconds; /* grey, invert, resize, centre; summed over the threads */
  double classify_seconds;   /* the engine, on the calling thread */
  double waiting_seconds;    /* the calling thread waiting for decoded images */
  double callback_seconds;   /* in the callback (writing results) */
  double wall_seconds;
  /* With ttp_options.open_behind (fields a caller's older struct_size leaves out are not
     written): the seconds the call waited for the engine to open, and the files decoded by
     then (or failed). */
  double opening_seconds;
  size_t opening_files;
} ttp_bulk_stats;

/* Classifies image files: a pool of `threads` threads (0: one per core) reads and decodes them
   (ttp_load_image with options) straight into the engine's input slots while the engine
   classifies the batches already decoded; decoding and batches in flight share the `slots`
   slots of the pipeline (ttp_options.slots; a slot holds ttp_batch_capacity images), so memory stays bounded and one slow file holds back nothing but its own batch. A file that fails
   is reported to the callback with its error and the others go on. stats may be NULL.
   Returns TTP_OK (also when files failed: see stats->failed), TTP_ERR_INVALID_ARGUMENT,
   TTP_ERR_CANCELLED (ttp_cancel), or an engine failure (TTP_ERR_GPU_LOST as for ttp_classify):
   the files reported until then are right, the batch that failed and those after it are not
   reported.
   Tar archives (a path ending in .tar, .tar.gz or .tgz: WebDataset's shards, plain or gzip'd)
   are classified member by member, in the archive's order, where the archive stands in the
   list: the regular members whose extension is an image's ("./" dropped from their names;
   names with a component beginning with '.', directories, links and other members skipped),
   each reported as the path "ARCHIVE/MEMBER" and counted as a file. Archives are read on a
   thread of their own, at most 64 MiB of members ahead of the decoding threads; a member over
   options->max_file_bytes or that cannot be decoded is that member's error; an archive that
   cannot be read, or is corrupt or truncated, is one error reported with the archive's path,
   after its members read before. A build without libarchive reports every archive as an
   error saying so. */
ttp_status ttp_classify_files(ttp_pipeline* p, const char* const* paths, size_t count,
                              const ttp_image_options* options, int threads,
                              ttp_file_callback callback, void* user, ttp_bulk_stats* stats);

/* During a ttp_file_callback of a classified file (result not NULL), called from the callback:
   that file's ttp_uncertainty (valid during the callback only); NULL anywhere else. */
const ttp_uncertainty* ttp_file_uncertainty(const ttp_pipeline* p);

/* Asks a running ttp_classify_files or ttp_classify_paths on p to stop: it submits no new
   batch; the CPU engines give the batch they are computing up between images (or tiles), the
   GPU engines finish theirs (milliseconds); every file whose batch was collected and whose turn
   has come is reported (so the rows reported are the first N files, in order), and the call
   returns TTP_ERR_CANCELLED; stats->files - stats->classified - stats->failed files were not
   done. A ttp_classify, ttp_classify_uncertainty or ttp_collect call on a CPU engine stops the
   same way, between images, returning TTP_ERR_CANCELLED without results. Async-signal-safe (one
   atomic store): meant for a signal handler or another thread. A request lasts until the call
   it stopped returns; one made while no call runs stops the next one before its first batch
   (or, on a CPU engine, its first image). */
void ttp_cancel(ttp_pipeline* p);

/* ttp_classify_files over what ttp_list_files(paths, count, list_options) would list (NULL
   list_options: the defaults), walking directories on a thread of its own while the files
   already found are decoded and classified: the first results come before the walk ends. The
   callback sees the files in the walk's order, index counting from 0, and stats->files is the
   number the walk found. Returns as ttp_classify_files, and TTP_ERR_OUT_OF_MEMORY if the walk
   could not go on (the files found before are reported). */
ttp_status ttp_classify_paths(ttp_pipeline* p, const char* const* paths, size_t count,
                              const ttp_list_options* list_options,
                              const ttp_image_options* options, int threads,
                              ttp_file_callback callback, void* user, ttp_bulk_stats* stats);

/* ---- Writing results -------------------------------------------------------------------------- *
 * One row per file. CSV (RFC 4180, a header line first, fields quoted when they hold a comma
 * or a quote): path,status,class,label,probability; then with top-k > 1
 * class_2,label_2,probability_2 .. class_K,label_K,probability_K; then with probabilities
 * spread and one p_LABEL column per class; then with uncertainty entropy,mutual_information,
 * agreement (ttp_uncertainty). status is "ok" or the file's error; the other fields of an error
 * row are empty. JSON Lines: one object per line with the same fields ("top": a list of {class,
 * label, probability}; "spread" and "probabilities": a list; "entropy", "mutual_information",
 * "agreement"), null where empty.
 *
 * Text fields, so that neither a terminal showing the output nor a spreadsheet opening it can
 * be driven by a file's name or contents, and two names never give one field:
 *   - status: the error message made printable (ttp_printable; the library's own messages are
 *     already), without the "path: " it begins with;
 *   - CSV path and label (and the header's p_LABEL): printable and lossless: each byte of a
 *     control character (C0 with line breaks and TAB, DEL, C1), each byte that is not part of
 *     valid UTF-8 and each backslash is written \xHH, so a cell holds no line break and
 *     decoding its \xHH gives back the exact bytes (Python: codecs.escape_decode(cell.encode())
 *     [0], after the apostrophe below); printable UTF-8 is kept;
 *   - CSV text cells (path, status, label, the header's) that begin with '=', '+', '-' or '@'
 *     get a leading apostrophe, which spreadsheets take as "text, not a formula" (OWASP's CSV
 *     injection; its TAB and CR never begin a cell here: they are written \x09, \x0d), and one
 *     that begins with an apostrophe gets a second one: a reader drops exactly one leading
 *     apostrophe from any text cell that begins with one. The apostrophe is inside the quotes
 *     of a quoted field; numbers are never changed. TTP_WRITE_CSV_FORMULAS leaves the cells
 *     as they are (no apostrophes; the escapes stay);
 *   - JSON strings: '"', '\\' and control characters (C0, DEL, C1) escaped as JSON does
 *     (\n, \u00XX), printable UTF-8 kept, and each byte that is not part of valid UTF-8, 0xHH,
 *     written as the lone surrogate \udcHH (Python's surrogateescape, PEP 383), which no valid
 *     text gives: two different names never give the same string, and Python's
 *     os.fsencode(json.loads(line)["path"]) gives back the exact bytes (some strict parsers
 *     refuse lone surrogates; only names that are not UTF-8 have them).
 *
 * The writers' `columns` argument: 0, or the sum of these. Other values keep the argument's
 * earlier meaning ("probabilities": nonzero): one with bits besides these three, a negative
 * one included, writes the probabilities (and the uncertainty where it is positive with bit 2),
 * cells neutralised (4 and 6, which wrote the probabilities before TTP_WRITE_CSV_FORMULAS came,
 * no longer do). */
enum { TTP_WRITE_PROBABILITIES = 1, TTP_WRITE_UNCERTAINTY = 2, TTP_WRITE_CSV_FORMULAS = 4 };

typedef enum ttp_format { TTP_FORMAT_CSV = 0, TTP_FORMAT_JSONL = 1 } ttp_format;

typedef struct ttp_writer ttp_writer;

/* out: an open stream (not closed by the writer). topk: 1..classes. The pipeline gives the
   labels and must outlive the writer. Writes the CSV header. */
ttp_status ttp_writer_open(const ttp_pipeline* p, FILE* out, ttp_format format, int topk,
                           int columns, ttp_writer** writer, char* error,
                           size_t error_size);
/* As ttp_writer_open, for rows appended to an output that has its header already (a resumed
   run, ttapipe classify --resume): writes no header. */
ttp_status ttp_writer_open_append(const ttp_pipeline* p, FILE* out, ttp_format format, int topk,
                                  int columns, ttp_writer** writer, char* error,
                                  size_t error_size);
/* One row: result and probabilities (both required) as ttp_file_callback gives them, or error
   (then both may be NULL). Returns TTP_ERR_IO when the stream fails (disk full, closed pipe),
   TTP_ERR_OUT_OF_MEMORY when the row could not be held. */
ttp_status ttp_writer_write(ttp_writer* w, const char* path, const ttp_result* result,
                            const float* probabilities, const char* error);
/* ttp_writer_write with the row's uncertainty (ttp_file_uncertainty's; NULL: empty fields), for
   a writer opened with TTP_WRITE_UNCERTAINTY. */
ttp_status ttp_writer_write_uncertainty(ttp_writer* w, const char* path, const ttp_result* result,
                                        const float* probabilities,
                                        const ttp_uncertainty* uncertainty, const char* error);
/* The rows written so far, handed to the stream and the stream flushed. A writer holds its
   rows and hands them over whole, one fwrite a flush: when 64 KiB of them wait, here, and at
   ttp_writer_close; so the stream never holds a part of a row that a later flush completes
   (on an unbuffered stream, setvbuf _IONBF, each flush is one write(2) of whole rows: what a
   killed process leaves in the file ends with a whole row). Call it as often as rows must
   reach the file (ttapipe classify: at least every second). Returns TTP_ERR_IO when the
   stream fails, TTP_ERR_OUT_OF_MEMORY when a row could not be held. */
ttp_status ttp_writer_flush(ttp_writer* w);
/* Flushes and frees; returns TTP_ERR_IO if anything written was lost. Accepts NULL. */
ttp_status ttp_writer_close(ttp_writer* w);

/* ---- Measuring ------------------------------------------------------------------------------ */

/* Where ttp_classify's time went, summed since profiling was switched on. GPU engines time their
   copies and batches with CUDA events (GPU time); the CPU engine counts its work as compute. */
typedef struct ttp_run_stats {
  size_t struct_size;  /* sizeof(ttp_run_stats), set by the caller */
  size_t batches, images;
  double h2d_ms;       /* copying images in */
  double compute_ms;   /* the batches: augment, layers, merge (a graph replay, or its launches) */
  double d2h_ms;       /* copying results out */
  double host_ms;      /* the host's own work in ttp_classify: staging, launching, handing out */
} ttp_run_stats;

/* Where ttp_open's time went, in seconds of wall time. engine_s is all of the engine's opening
   (with TTP_ENGINE_AUTO, every engine tried); a GPU engine's parts of it are below, and plan_s is
   the rest (a CPU engine's whole opening). With several devices, each device's parts summed. */
typedef struct ttp_startup {
  size_t struct_size; /* sizeof(ttp_startup), set by the caller */
  double model_s;     /* reading and checking the model */
  double engine_s;    /* opening the engine, of which: */
  double cuda_s;      /*   CUDA's start: counting the GPUs, each device's context (0: CPU) */
  double plan_s;      /*   the engine's plan: GPU libraries loaded, weights up, cuDNN's search */
  double buffers_s;   /*   pinned host and device buffers, streams and events */
  double graphs_s;    /*   capturing each (slot, bucket)'s graph and warming it up */
} ttp_startup;
ttp_status ttp_get_startup(const ttp_pipeline* p, ttp_startup* startup);

/* on: 1 starts profiling (the counters restart from zero; GPU engines then record a few more
   events per batch), 0 stops it. */
ttp_status ttp_set_profiling(ttp_pipeline* p, int on);
ttp_status ttp_get_run_stats(const ttp_pipeline* p, ttp_run_stats* stats);

/* The GPU engine alone, inputs already on the GPU: copies count images (1..max_batch) to the
   device once, then replays their batch `replays` times (or launches it eagerly, as the
   pipeline does), timing each replay with CUDA events into ms[0..replays-1]. Nothing is copied
   back. Returns TTP_ERR_INVALID_ARGUMENT for the CPU engine. */
ttp_status ttp_bench_device(ttp_pipeline* p, const uint8_t* images, size_t count, int replays,
                            double* ms);

/* ---- Machine ------------------------------------------------------------------------------ */

typedef struct ttp_gpu_info {
  char name[256];
  int major, minor;          /* compute capability */
  int sm_clock_mhz;          /* peak */
  int memory_clock_mhz;      /* peak */
  int driver_version;        /* CUDA driver API version, e.g. 13000 */
  int runtime_version;
  size_t memory_bytes;
} ttp_gpu_info;

/* Describes CUDA device `device`. Returns TTP_ERR_NO_GPU without one (or in a CPU-only build),
   TTP_ERR_INVALID_ARGUMENT for an index out of range. */
ttp_status ttp_get_gpu_info(int device, ttp_gpu_info* info);


/* The number of CUDA devices this process can use: 0 without a GPU, without a driver, or in a
   CPU-only build. Initialises the CUDA runtime (the first call may take a moment) but selects
   no device and creates no context. */
int ttp_gpu_count(void);

/* One line describing how the library was built: "ttapipe 0.1.0, CUDA 13.0, cuDNN 9.19.0, ..."
   or "ttapipe 0.1.0, CPU only". Static text, never NULL. */
const char* ttp_build_string(void);

#ifdef __cplusplus
}
#endif

#endif /* TTAPIPE_H */
