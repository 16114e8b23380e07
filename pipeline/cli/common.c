/* Helpers the subcommands share: opening the pipeline and reading image files as the options
   say, errors, time. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* The message made printable as the library's are (ttp_printable): the paths it names may hold
   any byte, and the terminal must not take them for commands. */
int cli_fail(const char* fmt, ...) {
  char raw[4096], shown[4 * sizeof raw];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  ttp_printable(raw, shown, sizeof shown);
  fprintf(stderr, "ttapipe: %s\n", shown);
  return CLI_EXIT_FATAL;
}

/* ttp_edge's names, in its order. */
static const char* const tta_edges[] = {"zero", "replicate", "reflect", NULL};

/* The augmentation the --tta options ask for. */
static int tta_from_args(const cli_args* a, ttp_tta* t) {
  static const char* const kinds[] = {"uniform", "gaussian", NULL};
  static const char* const merges[] = {"mean", "vote", "max", "gmean", "logits", NULL};
  static const ttp_merge merge_modes[] = {TTP_MERGE_MEAN, TTP_MERGE_VOTE, TTP_MERGE_MAX,
                                          TTP_MERGE_GMEAN, TTP_MERGE_GMEAN};
  ttp_tta_init(t);
  const char* policy = cli_get(a, "tta-policy");
  char error[TTP_ERROR_SIZE];
  if (policy && ttp_read_tta_policy(policy, t, error, sizeof error) != TTP_OK)
    return cli_fail("%s", error);
  long copies = t->copies, shift = t->shift;
  const int weighed = t->copies; /* the copies a policy's weights are for */
  int kind = t->noise_kind == TTP_NOISE_GAUSSIAN, merge = (int)t->merge, edge = (int)t->edge, rc;
  if ((rc = cli_get_long(a, "tta", 1, 64, &copies)) || (rc = cli_get_long(a, "tta-shift", 0, 16, &shift)) ||
      (rc = cli_get_float_pair(a, "tta-contrast", &t->contrast_min, &t->contrast_max)) ||
      (rc = cli_get_float_pair(a, "tta-brightness", &t->brightness_min, &t->brightness_max)) ||
      (rc = cli_get_float(a, "tta-noise", &t->noise)) ||
      (rc = cli_get_float(a, "tta-temperature", &t->temperature)) ||
      (rc = cli_get_choice(a, "tta-noise-kind", kinds, &kind)) ||
      (rc = cli_get_u64(a, "seed", &t->seed)) || (rc = cli_get_choice(a, "merge", merges, &merge)) ||
      (rc = cli_get_float(a, "tta-flip-h", &t->flip_h)) ||
      (rc = cli_get_float(a, "tta-flip-v", &t->flip_v)) ||
      (rc = cli_get_float(a, "tta-rotate", &t->rotate)) ||
      (rc = cli_get_float_pair(a, "tta-scale", &t->scale_min, &t->scale_max)) ||
      (rc = cli_get_float(a, "tta-translate", &t->translate)) ||
      (rc = cli_get_choice(a, "tta-edge", tta_edges, &edge)))
    return rc;
  t->edge = (ttp_edge)edge; /* tta_edges is in ttp_edge's order */
  const char* views = cli_get(a, "tta-views");
  if (views) {
    const int asked = (int)copies;
    if (ttp_tta_set_views(t, views, error, sizeof error) != TTP_OK)
      return cli_usage_error(a->command, "--tta-views: %s", error);
    if (cli_get(a, "tta") && asked != t->copies)
      return cli_usage_error(a->command, "--tta %d, but --tta-views lists %d views", asked,
                             t->copies);
    copies = t->copies;
  }
  int weights = 0;
  const int policy_weights = cli_tta_weighted(t);
  if ((rc = cli_get_floats(a, "tta-weights", t->weights, TTP_MAX_COPIES, &weights))) return rc;
  if (weights) { /* sets the copies, as a list of views does */
    for (int c = weights; c < TTP_MAX_COPIES; c++) t->weights[c] = 0;
    if (!cli_tta_weighted(t))
      return cli_usage_error(a->command, "--tta-weights: not all 0 (equal ones: leave it out)");
    if ((cli_get(a, "tta") || views) && weights != copies)
      return cli_usage_error(a->command, "--tta-weights lists %d weights, but there are %ld "
                             "copies", weights, copies);
    copies = weights;
  } else if (policy_weights && copies != weighed) {
    /* a policy's weights are a copy each: other copies need weights of their own */
    return cli_usage_error(a->command, "%ld copies, but the policy weighs %d: give "
                           "--tta-weights too", copies, weighed);
  }
  t->copies = (int)copies;
  t->shift = (int)shift;
  t->noise_kind = kind ? TTP_NOISE_GAUSSIAN : TTP_NOISE_UNIFORM;
  if (cli_flag(a, "no-tta-original")) t->keep_original = 0;
  if (cli_flag(a, "no-tta-clamp")) t->clamp = 0;
  t->merge = merge_modes[merge];
  return CLI_EXIT_OK;
}

int cli_image_options(const cli_args* a, ttp_image_options* o) {
  static const char* const inverts[] = {"auto", "yes", "no", NULL};
  static const char* const centers[] = {"none", "mnist", NULL};
  static const ttp_invert invert_ids[] = {TTP_INVERT_AUTO, TTP_INVERT_YES, TTP_INVERT_NO};
  static const ttp_center center_ids[] = {TTP_CENTER_NONE, TTP_CENTER_MNIST};
  int invert = 0, center = 0, rc;
  ttp_image_options_init(o);
  if ((rc = cli_get_choice(a, "invert", inverts, &invert)) ||
      (rc = cli_get_choice(a, "center", centers, &center)))
    return rc;
  o->invert = invert_ids[invert];
  o->center = center_ids[center];
  const char* size = cli_get(a, "max-size");
  if (size) {
    char tail;
    if (sscanf(size, "%dx%d%c", &o->max_width, &o->max_height, &tail) != 2 || o->max_width < 1 ||
        o->max_height < 1 || o->max_width > 8192 || o->max_height > 8192)
      return cli_usage_error(a->command, "--max-size must be WxH, each 1..8192, not '%s'", size);
  }
  const char* pixels = cli_get(a, "max-pixels");
  if (pixels) { /* N, or N followed by M for millions */
    char* end;
    errno = 0;
    const double v = strtod(pixels, &end);
    const double n = *end == 'M' || *end == 'm' ? v * 1e6 : v;
    if (errno || end == pixels || (*end && ((*end != 'M' && *end != 'm') || end[1])) || n < 1 ||
        n > 8192.0 * 8192.0)
      return cli_usage_error(a->command, "--max-pixels must be 1..67108864 (8192x8192), or "
                             "millions as 50M, not '%s'", pixels);
    o->max_pixels = (uint64_t)n;
  }
  o->full_size = cli_flag(a, "full-size");
  return CLI_EXIT_OK;
}

const char* const cli_engine_names[] = {"auto", "cpu", "cudnn", "fused", "onednn", NULL};
const ttp_engine cli_engine_ids[] = {TTP_ENGINE_AUTO, TTP_ENGINE_CPU, TTP_ENGINE_CUDNN,
                                     TTP_ENGINE_FUSED, TTP_ENGINE_ONEDNN};

int cli_engine_on_host(const char* name) {
  return name && (!strcmp(name, "cpu") || !strcmp(name, "onednn"));
}

const char* cli_opened_engine(const ttp_pipeline* p) {
  const char* d = ttp_engine_description(p);
  for (int i = 1; cli_engine_names[i]; i++) {
    size_t n = strlen(cli_engine_names[i]);
    if (!strncmp(d, cli_engine_names[i], n) && (d[n] == ',' || d[n] == ' ' || !d[n]))
      return cli_engine_names[i];
  }
  return "auto";
}

int cli_pipeline_on_gpu(const ttp_pipeline* p) {
  return p && !cli_engine_on_host(cli_opened_engine(p));
}

int cli_engine_id(const char* name, ttp_engine* id) {
  for (int i = 1; cli_engine_names[i]; i++)
    if (strcmp(name, cli_engine_names[i]) == 0) {
      *id = cli_engine_ids[i];
      return 1;
    }
  return 0;
}

const char* const cli_wait_names[] = {"auto", "spin", "yield", "block", NULL};
const char* const cli_plan_names[] = {"measure", "heuristic", NULL};

int cli_get_devices(const cli_args* a, int* devices, int* count) {
  const char* text = cli_get(a, "devices");
  *count = 0;
  if (!text) return CLI_EXIT_OK;
  if (strcmp(text, "all") == 0) {
    const int n = ttp_gpu_count();
    if (n == 0) return cli_usage_error(a->command, "--devices all: this machine has no GPU");
    for (int g = 0; g < n && g < 8; g++) devices[(*count)++] = g;
    return CLI_EXIT_OK;
  }
  for (const char* at = text;;) {
    char* end;
    const long d = strtol(at, &end, 10);
    if (end == at || d < 0 || d > 1023 || (*end && *end != ',') || *count == 8)
      return cli_usage_error(a->command, "--devices must be all, or 1 to 8 device indices "
                             "separated by commas, not '%s'", text);
    devices[(*count)++] = (int)d;
    if (!*end) return CLI_EXIT_OK;
    at = end + 1;
  }
}

int cli_get_precision(const cli_args* a, ttp_precision* p) {
  const char* names[8];
  int count = 0, index = (int)*p;
  while (count < 7 && ttp_precision_name((ttp_precision)count))
    names[count] = ttp_precision_name((ttp_precision)count), count++;
  names[count] = NULL;
  const int rc = cli_get_choice(a, "precision", names, &index);
  *p = (ttp_precision)index;
  return rc;
}

/* cli_open_pipeline, with the augmentation `given` instead of the arguments' when given is not
   NULL. */
static int open_pipeline(const cli_args* a, cli_pipeline_defaults d, const ttp_tta* given,
                         ttp_pipeline** p, ttp_tta* tta) {
  ttp_options o;
  ttp_options_init(&o);
  int engine = 0, wait = 0, plan = (int)d.plan;
  long threads = 0, batch = d.batch ? d.batch : o.max_batch, slots = d.slots ? d.slots : o.slots;
  long device = d.device;
  int devices[8], device_count, rc;
  if ((rc = cli_require(a, "model", &o.model_dir)) || (rc = cli_get_choice(a, "engine", cli_engine_names, &engine)) ||
      (rc = cli_get_precision(a, &o.precision)) ||
      (rc = cli_get_choice(a, "wait", cli_wait_names, &wait)) ||
      (rc = cli_get_choice(a, "plan", cli_plan_names, &plan)) ||
      (rc = cli_get_long(a, "batch", 1, 65536, &batch)) || (rc = cli_get_long(a, "slots", 2, 16, &slots)) ||
      (rc = cli_get_long(a, "device", 0, 1023, &device)) ||
      (rc = cli_get_devices(a, devices, &device_count)) ||
      (rc = cli_get_long(a, "threads", 1, 256, &threads)) || (rc = tta_from_args(a, tta)))
    return rc;
  if (given) *tta = *given;
  o.engine = cli_engine_ids[engine];
  o.max_batch = (int)batch;
  o.slots = (int)slots;
  o.device = (int)device;
  o.devices = devices, o.device_count = device_count;
  o.no_graph = cli_flag(a, "no-graph");
  o.lazy_graphs = d.lazy_graphs;
  o.open_behind = d.behind;
  o.wait = (ttp_wait)wait;
  o.plan = (ttp_plan)plan;
  const char* cache = cli_get(a, "plan-cache");
  if (cache) o.plan_cache = strcmp(cache, "off") == 0 ? "" : cache;
  /* Several GPUs choose by a fixed rule, as the ranks of an MPI job do (--plan overrides). */
  if (device_count > 1 && !cli_get(a, "plan")) o.plan = TTP_PLAN_HEURISTIC;
  o.threads = (int)threads;
  o.tta = tta;
  int means, stds;
  if ((rc = cli_get_floats(a, "mean", o.mean, 3, &means)) ||
      (rc = cli_get_floats(a, "std", o.std, 3, &stds)))
    return rc;
  if ((means == 0) != (stds == 0) || means == 2 || stds == 2)
    return cli_usage_error(a->command, "--mean and --std come together, each one value or three");
  o.normalize = means > 0;
  for (int c = 1; c < 3; c++) { /* one value: every channel's */
    if (means == 1) o.mean[c] = o.mean[0];
    if (stds == 1) o.std[c] = o.std[0];
  }
  ttp_status s = ttp_open(&o, p);
  if (s != TTP_OK) {
    /* Settings out of range are the user's to fix: a usage error, in the library's words. */
    rc = s == TTP_ERR_INVALID_ARGUMENT ? cli_usage_error(a->command, "%s", ttp_last_error(*p))
                                       : cli_fail("%s", ttp_last_error(*p));
    ttp_close(*p);
    *p = NULL;
    return rc;
  }
  if (cli_flag(a, "verbose") && !d.behind) cli_print_opening(*p);
  return CLI_EXIT_OK;
}

void cli_print_opening(ttp_pipeline* p) {
  if (ttp_wait_open(p) != TTP_OK) return;
  fprintf(stderr, "ttapipe: engine: %s\n", ttp_engine_description(p));
  ttp_startup t = {.struct_size = sizeof t};
  if (ttp_get_startup(p, &t) == TTP_OK) {
    fprintf(stderr, "ttapipe: opening took %.1f ms: the model %.1f ms, the engine %.1f ms",
            1e3 * (t.model_s + t.engine_s), 1e3 * t.model_s, 1e3 * t.engine_s);
    if (t.cuda_s > 0) /* a GPU engine's parts */
      fprintf(stderr, " (CUDA's start %.1f, the plan %.1f, buffers %.1f, graphs %.1f)",
              1e3 * t.cuda_s, 1e3 * t.plan_s, 1e3 * t.buffers_s, 1e3 * t.graphs_s);
    fputc('\n', stderr);
  }
}

int cli_open_pipeline(const cli_args* a, cli_pipeline_defaults d, ttp_pipeline** p,
                      ttp_tta* tta) {
  return open_pipeline(a, d, NULL, p, tta);
}

int cli_classify_tta(const cli_args* a, ttp_plan default_plan, const ttp_tta* tta,
                     const uint8_t* images, size_t n, ttp_result* results, float* probs,
                     ttp_uncertainty* uncertainty) {
  ttp_pipeline* p = NULL;
  ttp_tta used;
  ttp_result* scratch = results ? NULL : malloc(n * sizeof *scratch);
  int rc = results || scratch
               ? open_pipeline(a, (cli_pipeline_defaults){.plan = default_plan}, tta, &p, &used)
               : cli_fail("out of memory");
  ttp_result* into = results ? results : scratch;
  if (rc == CLI_EXIT_OK &&
      (uncertainty ? ttp_classify_uncertainty(p, images, n, into, probs, uncertainty)
                   : ttp_classify(p, images, n, into, probs)) != TTP_OK)
    rc = cli_fail("%s", ttp_last_error(p));
  ttp_close(p);
  free(scratch);
  return rc;
}

int cli_tta_weighted(const ttp_tta* t) {
  for (int c = 0; c < TTP_MAX_COPIES; c++)
    if (t->weights[c] != 0) return 1;
  return 0;
}

void cli_describe_tta(const ttp_tta* t, char* buf, size_t size) {
  static const char* const merges[] = {"mean", "vote", "max", "gmean"};
  char tempered[48] = "";
  if (t->temperature != 1.0f) snprintf(tempered, sizeof tempered, ", temperature %g", t->temperature);
  if (t->copies == 1 && t->keep_original) {
    snprintf(buf, size, "none (1 copy, as it is)%s", tempered);
    return;
  }
  char views[320];
  const char* edge = (unsigned)t->edge <= TTP_EDGE_REFLECT ? tta_edges[t->edge] : "?";
  if (t->view_count > 0)
    snprintf(views, sizeof views, "%d listed views, edge %s", t->view_count, edge);
  else if (t->flip_h > 0 || t->flip_v > 0 || t->rotate > 0 || t->scale_min != 1.0f ||
           t->scale_max != 1.0f || t->translate > 0 || t->edge != TTP_EDGE_ZERO)
    snprintf(views, sizeof views, "shift %d px, mirrors %g left-right %g upside down, rotation "
             "up to %g deg, zoom %g..%g, sub-pixel translation %g px, edge %s", t->shift,
             t->flip_h, t->flip_v, t->rotate, t->scale_min, t->scale_max, t->translate, edge);
  else
    snprintf(views, sizeof views, "shift %d px", t->shift);
  char weights[400] = "";
  const int weighted = cli_tta_weighted(t);
  for (int c = 0, n = 0; weighted && c < t->copies && c < TTP_MAX_COPIES; c++)
    if (n >= 0 && (size_t)n < sizeof weights)
      n += snprintf(weights + n, sizeof weights - n, "%s%g", c ? "," : ", weights ",
                    t->weights[c]);
  snprintf(buf, size,
           "%d copies (%s), %s, contrast %g..%g, brightness %g..%g, %s noise %g%s, "
           "seed %llu, merge %s%s%s",
           t->copies, t->keep_original ? "copy 0 as it is" : "all augmented", views,
           t->contrast_min, t->contrast_max, t->brightness_min, t->brightness_max,
           t->noise_kind == TTP_NOISE_GAUSSIAN ? "gaussian" : "uniform", t->noise,
           t->clamp ? "" : ", unclamped", (unsigned long long)t->seed, merges[t->merge], weights,
           tempered);
}

double cli_started;

double cli_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
