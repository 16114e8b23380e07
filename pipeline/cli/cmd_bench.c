/* ttapipe bench: throughput and latency over a sweep of engines, precisions, batch sizes, TTA
   copies and graph on/off, measured the same way every time.

   Each point opens a pipeline (max_batch = the batch), warms it up, then spends half its time
   (or iterations) on latency, calls of one batch each, and half on throughput, calls of up to
   16 batches each so that the streaming core overlaps the copies with the compute (e2e mode),
   or replays of one batch with the inputs already on the GPU (device mode). The same for every
   engine. Profiling splits the
   throughput phase's time per batch into copying in, the batch itself, copying out and the
   host's share. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "report.h"

static const cli_option bench_options[] = {
    {"model", "PATH", "model: a directory in the mnistCUDNN layout or an ONNX file (required)"},
    {"images", "FILE", "an IDX image file to cycle through (default: random images)"},
    {"engine", "LIST", "engines, comma-separated: auto,cpu,onednn,cudnn,fused (default auto: "
                       "each row names the engine auto opened)"},
    {"precision", "LIST", "fp32,fp16,tf32 (default fp32; the CPU engines are fp32 only, tf32 is "
                          "cudnn's)"},
    {"batch", "LIST", "batch sizes (default 1,64,1024)"},
    {"tta", "LIST", "TTA copies per image (default 5, or the policy's)"},
    {"tta-policy", "FILE", "the augmentation from a policy file (README: TTA policies); --tta "
                           "then sets only the copies"},
    {"graph", "LIST", "on,off: CUDA Graph replay or eager launches (default on)"},
    {"mode", "MODE", "e2e: host memory to host results (default); device: inputs already on "
                     "the GPU, nothing copied back"},
    {"seconds", "S", "measuring time per point (default 1)"},
    {"iterations", "N", "measure N calls per phase instead of a duration"},
    {"warmup", "N", "calls before measuring (default 3)"},
    {"slots", "K", "pinned transfer slots (default 3)"},
    {"wait", "MODE", "auto|spin|yield|block: how calls wait for the GPU (default auto)"},
    {"plan-cache", "FILE", "off|FILE: the cudnn engine's plan cache (default "
                           "$XDG_CACHE_HOME/ttapipe/plans, else ~/.cache/ttapipe/plans)"},
    {"device", "D", "CUDA device (default 0)"},
    {"devices", "LIST", "all|D,D,...: several GPUs behind each pipeline (--batch is then each "
                        "GPU's batch; device mode splits batch x GPUs images among them)"},
    {"threads", "N", "threads of the CPU engines (default: one per core)"},
    {"json", "FILE", "also write every point, and the machine, as JSON to FILE"},
    {"report", "FILE", "also write an HTML report to FILE: images/s against the batch on log "
                       "axes with the performance model's ceilings, and the latencies"},
    {NULL, NULL, NULL},
};

typedef bench_point point; /* report.h */

typedef struct bench {
  const cli_args* a;
  const char* model;
  const uint8_t* pool; /* images to draw from */
  size_t pool_count;
  size_t pixels;       /* bytes of one image: the model's channels x rows x columns */
  int device_mode, warmup, slots, device, threads, wait;
  int devices[8], device_count; /* --devices: 0 when not given */
  const char* plan_cache;       /* --plan-cache: NULL (the default file), "" (off) or a file */
  ttp_tta policy;               /* the augmentation; each point sets its copies */
  long iterations;
  double seconds;
  ttp_result* results;
} bench;

static int by_value(const void* x, const void* y) {
  double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

static double quantile(double* v, size_t n, double q) {
  qsort(v, n, sizeof *v, by_value);
  size_t i = (size_t)(q * (double)(n - 1) + 0.5);
  return v[i < n ? i : n - 1];
}

/* Splits a comma-separated list into at most max items (pointers into a copy of text). */
static int split(const char* text, char* copy, size_t size, const char** items, int max) {
  snprintf(copy, size, "%s", text);
  int n = 0;
  for (char* s = strtok(copy, ","); s && n < max; s = strtok(NULL, ",")) items[n++] = s;
  return n;
}

/* The CPU engines: one precision (fp32), no graphs. */
/* The GPUs behind each pipeline: --batch is each one's batch. */
static size_t gpu_count(const bench* b) { return b->device_count > 1 ? (size_t)b->device_count : 1; }


/* Measures one point; returns 0, 1 when the point cannot run (printed as skipped), or 2 when
   auto opened a CPU engine for a point that only a GPU engine would make differ (fp16, graphs
   off: the fp32 point is the same). */
static int measure(bench* b, const char* engine, const char* precision, const char* graph,
                   int batch, int copies, point* out) {
  ttp_tta tta = b->policy;
  tta.copies = copies;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = b->model;
  if (strcmp(engine, "auto")) cli_engine_id(engine, &o.engine); /* run_bench checked it */
  ttp_precision_from_name(precision, &o.precision); /* run_bench checked it */
  o.max_batch = batch;
  o.slots = b->slots;
  o.device = b->device;
  o.devices = b->devices, o.device_count = b->device_count;
  o.threads = b->threads;
  o.no_graph = strcmp(graph, "off") == 0;
  o.wait = (ttp_wait)b->wait;
  o.plan_cache = b->plan_cache;
  o.tta = &tta;
  ttp_pipeline* p = NULL;
  if (ttp_open(&o, &p) != TTP_OK) {
    fprintf(stderr, "ttapipe bench: %s %s %s batch %d: %s\n", engine, precision, graph, batch,
            ttp_last_error(p));
    ttp_close(p);
    return 1;
  }
  if (!strcmp(engine, "auto")) { /* the row names the engine auto opened */
    engine = cli_opened_engine(p);
    if (cli_engine_on_host(engine)) {
      if (strcmp(precision, "fp32") || !strcmp(graph, "off")) {
        ttp_close(p);
        return 2;
      }
      precision = "fp32", graph = "-";
    }
  }
  size_t cap = 1 << 16;
  double* lat = malloc(cap * sizeof *lat);
  size_t n = 0, done = 0, offset = 0;
  *out = (point){.engine = engine, .precision = precision, .graph = graph, .batch = batch,
                 .copies = copies, .startup = {.struct_size = sizeof out->startup}};
  ttp_get_startup(p, &out->startup);
  const double flops = ttp_model(p)->flops;
  int rc = 0;

  if (b->device_mode) {
    {
      int replays = b->iterations > 0 ? (int)b->iterations : 50;
      /* Several GPUs: each its batch, replayed at once. */
      const size_t images = (size_t)batch * gpu_count(b);
      if (ttp_bench_device(p, b->pool, images, b->warmup > 0 ? b->warmup : 1, lat) != TTP_OK)
        rc = 1; /* an engine without a device: skipped */
      double start = cli_now();
      while (rc == 0 && n < cap && (b->iterations > 0 ? n < (size_t)replays
                                                      : cli_now() - start < b->seconds)) {
        int k = replays < (int)(cap - n) ? replays : (int)(cap - n);
        if (ttp_bench_device(p, b->pool, images, k, lat + n) != TTP_OK) rc = 1;
        n += (size_t)k;
      }
      if (rc) fprintf(stderr, "ttapipe bench: %s\n", ttp_last_error(p));
      if (rc == 0) {
        double mean = 0;
        for (size_t i = 0; i < n; i++) mean += lat[i];
        out->compute = mean / (double)n;
        out->p50 = quantile(lat, n, 0.5), out->p90 = quantile(lat, n, 0.9);
        out->p99 = quantile(lat, n, 0.99), out->p999 = quantile(lat, n, 0.999);
        out->images_per_s = (double)images / (out->p50 * 1e-3);
      }
    }
  } else {
    for (int w = 0; w < b->warmup && rc == 0; w++)
      rc = ttp_classify(p, b->pool, (size_t)batch, b->results, NULL) != TTP_OK;
    /* latency: one batch per call */
    double start = cli_now(), budget = b->seconds / 2;
    while (rc == 0 && n < cap && (b->iterations > 0 ? n < (size_t)b->iterations
                                                    : (n < 3 || cli_now() - start < budget))) {
      if (offset + (size_t)batch > b->pool_count) offset = 0;
      double t = cli_now();
      rc = ttp_classify(p, b->pool + offset * b->pixels, (size_t)batch, b->results, NULL) !=
           TTP_OK;
      lat[n++] = 1e3 * (cli_now() - t);
      offset += (size_t)batch;
    }
    /* throughput: many batches per call, profiled. Up to 16, so that the streaming core
       overlaps their copies and compute, as long as a call takes at most an eighth of the
       phase (one batch of a slow engine may take seconds) and the images fit the pool (16 of
       the largest batch); the same number for every GPU, so that none idles while another
       runs the call's odd batch. */
    double p50 = n ? quantile(lat, n, 0.5) : 0;
    const size_t gpus = gpu_count(b), fit = b->pool_count / ((size_t)batch * gpus);
    size_t batches = p50 > 0 ? (size_t)(1e3 * budget / 8 / p50) : 16;
    batches = batches < 1 ? 1 : batches > 16 ? 16 : batches;
    if (batches > fit) batches = fit > 0 ? fit : 1;
    const size_t per_call = (size_t)batch * batches * gpus;
    ttp_set_profiling(p, 1);
    double t0 = cli_now();
    size_t calls = 0;
    while (rc == 0 && (b->iterations > 0 ? calls < (size_t)b->iterations
                                         : (calls < 2 || cli_now() - t0 < budget))) {
      rc = ttp_classify(p, b->pool, per_call, b->results, NULL) != TTP_OK;
      done += per_call;
      calls++;
    }
    double elapsed = cli_now() - t0;
    ttp_run_stats st = {.struct_size = sizeof st};
    ttp_get_run_stats(p, &st);
    if (rc) {
      fprintf(stderr, "ttapipe bench: %s\n", ttp_last_error(p));
    } else {
      out->p50 = quantile(lat, n, 0.5), out->p90 = quantile(lat, n, 0.9);
      out->p99 = quantile(lat, n, 0.99), out->p999 = quantile(lat, n, 0.999);
      out->images_per_s = done / elapsed;
      double batches = st.batches ? (double)st.batches : 1;
      out->h2d = st.h2d_ms / batches, out->compute = st.compute_ms / batches;
      out->d2h = st.d2h_ms / batches, out->host = st.host_ms / batches;
    }
  }
  out->copies_per_s = out->images_per_s * copies;
  out->tflops = out->copies_per_s * flops * 1e-12;
  free(lat);
  ttp_close(p);
  return rc;
}

static void print_point(const point* q) {
  printf("%-6s %-5s %-5s %6d %3d %12.0f %12.0f %8.3f %9.3f %9.3f %9.3f %9.3f %8.3f %8.3f %8.3f "
         "%8.3f\n",
         q->engine, q->precision, q->graph, q->batch, q->copies, q->images_per_s, q->copies_per_s,
         q->tflops, q->p50, q->p90, q->p99, q->p999, q->h2d, q->compute, q->d2h, q->host);
  fflush(stdout);
}

static void json_point(FILE* f, const point* q, int first) {
  fprintf(f, "%s\n    {\"engine\": \"%s\", \"precision\": \"%s\", \"graph\": \"%s\", \"batch\": %d, "
          "\"copies\": %d, \"images_per_s\": %.1f, \"copies_per_s\": %.1f, \"tflops\": %.4f, "
          "\"latency_ms\": {\"p50\": %.4f, \"p90\": %.4f, \"p99\": %.4f, \"p99.9\": %.4f}, "
          "\"per_batch_ms\": {\"h2d\": %.4f, \"compute\": %.4f, \"d2h\": %.4f, \"host\": %.4f}, "
          "\"startup_ms\": {\"model\": %.3f, \"engine\": %.3f, \"cuda\": %.3f, \"plan\": %.3f, "
          "\"buffers\": %.3f, \"graphs\": %.3f}}",
          first ? "" : ",", q->engine, q->precision, q->graph, q->batch, q->copies, q->images_per_s,
          q->copies_per_s, q->tflops, q->p50, q->p90, q->p99, q->p999, q->h2d, q->compute, q->d2h,
          q->host, 1e3 * q->startup.model_s, 1e3 * q->startup.engine_s, 1e3 * q->startup.cuda_s,
          1e3 * q->startup.plan_s, 1e3 * q->startup.buffers_s, 1e3 * q->startup.graphs_s);
}

static int run_bench(const cli_args* a) {
  bench b = {.a = a, .warmup = 3, .slots = 3, .seconds = 1.0};
  long warmup = 3, slots = 3, device = 0, threads = 0, iterations = 0;
  float seconds = 1.0f;
  static const char* const modes[] = {"e2e", "device", NULL};
  int mode = 0, rc;
  if ((rc = cli_require(a, "model", &b.model)) || (rc = cli_get_choice(a, "mode", modes, &mode)) ||
      (rc = cli_get_choice(a, "wait", cli_wait_names, &b.wait)) ||
      (rc = cli_get_float(a, "seconds", &seconds)) ||
      (rc = cli_get_long(a, "iterations", 1, 1000000, &iterations)) ||
      (rc = cli_get_long(a, "warmup", 0, 1000, &warmup)) ||
      (rc = cli_get_long(a, "slots", 2, 16, &slots)) ||
      (rc = cli_get_long(a, "device", 0, 1023, &device)) ||
      (rc = cli_get_devices(a, b.devices, &b.device_count)) ||
      (rc = cli_get_long(a, "threads", 1, 256, &threads)))
    return rc;
  if (!(seconds > 0 && seconds <= 3600))
    return cli_usage_error(a->command, "--seconds must be in (0, 3600]");
  if ((b.plan_cache = cli_get(a, "plan-cache")) && strcmp(b.plan_cache, "off") == 0)
    b.plan_cache = "";
  b.device_mode = mode == 1, b.warmup = (int)warmup, b.slots = (int)slots, b.device = (int)device;
  b.threads = (int)threads, b.iterations = iterations, b.seconds = seconds;
  ttp_tta_init(&b.policy);
  char policy_copies[16] = "5";
  if (cli_get(a, "tta-policy")) {
    char error[TTP_ERROR_SIZE];
    if (ttp_read_tta_policy(cli_get(a, "tta-policy"), &b.policy, error, sizeof error) != TTP_OK)
      return cli_fail("%s", error);
    snprintf(policy_copies, sizeof policy_copies, "%d", b.policy.copies);
  }

  enum { MAX_ITEMS = 16 };
  char c1[256], c2[256], c3[256], c4[256], c5[256];
  const char *engines[MAX_ITEMS], *precisions[MAX_ITEMS], *batches_s[MAX_ITEMS],
      *copies_s[MAX_ITEMS], *graphs[MAX_ITEMS];
  int ne = split(cli_get(a, "engine") ? cli_get(a, "engine") : "auto", c1, sizeof c1, engines,
                 MAX_ITEMS);
  int np = split(cli_get(a, "precision") ? cli_get(a, "precision") : "fp32", c2, sizeof c2,
                 precisions, MAX_ITEMS);
  int nb = split(cli_get(a, "batch") ? cli_get(a, "batch") : "1,64,1024", c3, sizeof c3,
                 batches_s, MAX_ITEMS);
  int nt = split(cli_get(a, "tta") ? cli_get(a, "tta") : policy_copies, c4, sizeof c4, copies_s,
                 MAX_ITEMS);
  int ng = split(cli_get(a, "graph") ? cli_get(a, "graph") : "on", c5, sizeof c5, graphs, MAX_ITEMS);
  int batches[MAX_ITEMS], copies[MAX_ITEMS], largest = 1;
  for (int i = 0; i < ne; i++) {
    if (strcmp(engines[i], "naive") == 0)
      return cli_usage_error(a->command, "--engine: the naive baseline is a benchmark program "
                             "now: build/tests/bench_naive (tests/bench/naive.c)");
    ttp_engine id;
    if (strcmp(engines[i], "auto") && !cli_engine_id(engines[i], &id))
      return cli_usage_error(a->command, "--engine: unknown engine '%s'", engines[i]);
  }
  for (int i = 0; i < np; i++)
    if (ttp_precision_from_name(precisions[i], &(ttp_precision){0}) != TTP_OK)
      return cli_usage_error(a->command, "--precision: unknown precision '%s'", precisions[i]);
  for (int i = 0; i < ng; i++)
    if (strcmp(graphs[i], "on") && strcmp(graphs[i], "off"))
      return cli_usage_error(a->command, "--graph: on or off, not '%s'", graphs[i]);
  for (int i = 0; i < nb; i++) {
    char* end;
    long v = strtol(batches_s[i], &end, 10);
    if (*end || v < 1 || v > 65536) return cli_usage_error(a->command, "--batch: '%s'", batches_s[i]);
    batches[i] = (int)v;
    if (batches[i] > largest) largest = batches[i];
  }
  for (int i = 0; i < nt; i++) {
    char* end;
    long v = strtol(copies_s[i], &end, 10);
    if (*end || v < 1 || v > 64) return cli_usage_error(a->command, "--tta: '%s'", copies_s[i]);
    copies[i] = (int)v;
  }

  /* The model's input, from the model alone (the CPU engine opens without a GPU). */
  int in_c, in_h, in_w;
  double flops_per_copy = 0;
  {
    ttp_options o;
    ttp_options_init(&o);
    o.model_dir = b.model, o.engine = TTP_ENGINE_CPU, o.threads = 1;
    ttp_pipeline* p = NULL;
    if (ttp_open(&o, &p) != TTP_OK) {
      rc = cli_fail("%s", ttp_last_error(p));
      ttp_close(p);
      return rc;
    }
    in_c = ttp_model(p)->input_channels, in_h = ttp_model(p)->input_rows;
    in_w = ttp_model(p)->input_cols;
    flops_per_copy = ttp_model(p)->flops;
    ttp_close(p);
  }
  b.pixels = (size_t)in_c * in_h * in_w;
  /* The images: an IDX file cycled to fill the pool, or random bytes. */
  size_t pool = (size_t)largest * 16 > 4096 ? (size_t)largest * 16 : 4096;
  uint8_t* images = malloc(pool * b.pixels);
  b.results = malloc(pool * sizeof *b.results);
  if (!images || !b.results) return cli_fail("out of memory");
  const char* path = cli_get(a, "images");
  if (path) {
    ttp_images im;
    char error[TTP_ERROR_SIZE];
    if (ttp_read_idx_images(path, &im, error, sizeof error) != TTP_OK) return cli_fail("%s", error);
    if (im.channels != in_c || im.rows != in_h || im.cols != in_w)
      return cli_fail("%s: images are %dx%dx%d, the model needs %dx%dx%d", path, im.channels,
                      im.rows, im.cols, in_c, in_h, in_w);
    for (size_t i = 0; i < pool; i++)
      memcpy(images + i * b.pixels, im.pixels + (i % im.count) * b.pixels, b.pixels);
    ttp_free(im.pixels);
  } else {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < pool * b.pixels; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      images[i] = (uint8_t)(s >> 24);
    }
  }
  b.pool = images;
  b.pool_count = pool;

  time_t now = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime(&now));
  int host_only = 1; /* only CPU engines asked for: no CUDA call, no GPU line */
  for (int e = 0; e < ne; e++) host_only &= cli_engine_on_host(engines[e]);
  ttp_gpu_info gpu;
  int have_gpu = !host_only && ttp_get_gpu_info(b.device, &gpu) == TTP_OK;
  printf("# %s; %s; mode %s; %s\n", ttp_build_string(), date, b.device_mode ? "device" : "e2e",
         path ? path : "random images");
  if (have_gpu)
    printf("# GPU %d: %s, sm_%d%d, %d MHz SM, %d MHz memory, %.0f GiB; driver API %d, runtime %d\n",
           b.device, gpu.name, gpu.major, gpu.minor, gpu.sm_clock_mhz, gpu.memory_clock_mhz,
           gpu.memory_bytes / 1073741824.0, gpu.driver_version, gpu.runtime_version);
  printf("%-6s %-5s %-5s %6s %3s %12s %12s %8s %9s %9s %9s %9s %8s %8s %8s %8s\n", "engine",
         "prec", "graph", "batch", "N", "images/s", "copies/s", "TFLOP/s", "p50 ms", "p90 ms",
         "p99 ms", "p99.9 ms", "h2d ms", "batch ms", "d2h ms", "host ms");

  point* points = calloc((size_t)(ne * np * nb * nt * ng), sizeof *points);
  int count = 0;
  for (int e = 0; e < ne; e++)
    for (int pr = 0; pr < np; pr++)
      for (int g = 0; g < ng; g++) {
        int cpu = cli_engine_on_host(engines[e]);
        /* The CPU engines have one precision and no graphs. */
        if (cpu && (pr > 0 || g > 0)) continue;
        const char* graph = cpu ? "-" : graphs[g];
        for (int bi = 0; bi < nb; bi++)
          for (int t = 0; t < nt; t++)
            if (measure(&b, engines[e], cpu ? "fp32" : precisions[pr], graph, batches[bi], copies[t],
                        &points[count]) == 0)
              print_point(&points[count++]);
      }

  const char* json = cli_get(a, "json");
  if (json) {
    FILE* f = fopen(json, "w");
    if (!f) return cli_fail("%s: cannot create", json);
    fprintf(f, "{\n  \"build\": \"%s\", \"date\": \"%s\", \"mode\": \"%s\", \"images\": \"%s\",\n",
            ttp_build_string(), date, b.device_mode ? "device" : "e2e", path ? path : "random");
    if (have_gpu)
      fprintf(f, "  \"gpu\": {\"name\": \"%s\", \"capability\": \"%d.%d\", \"sm_clock_mhz\": %d, "
              "\"memory_clock_mhz\": %d, \"memory_bytes\": %zu, \"driver_version\": %d, "
              "\"runtime_version\": %d},\n", gpu.name, gpu.major, gpu.minor, gpu.sm_clock_mhz,
              gpu.memory_clock_mhz, gpu.memory_bytes, gpu.driver_version, gpu.runtime_version);
    else
      fprintf(f, "  \"gpu\": null,\n");
    fprintf(f, "  \"points\": [");
    for (int i = 0; i < count; i++) json_point(f, &points[i], i == 0);
    fprintf(f, "\n  ]\n}\n");
    if (fclose(f) != 0) return cli_fail("%s: writing failed", json);
  }
  int rc_report = CLI_EXIT_OK;
  const char* report_path = cli_get(a, "report");
  if (report_path && count) {
    char about[512];
    snprintf(about, sizeof about, "%s; %s; mode %s; %s; model %s%s%s", ttp_build_string(), date,
             b.device_mode ? "device" : "e2e", path ? path : "random images", b.model,
             have_gpu ? "; GPU " : "", have_gpu ? gpu.name : "");
    rc_report = bench_report_write(report_path, about, flops_per_copy, b.pixels, have_gpu, points,
                                   count);
  }
  free(points);
  free(images);
  free(b.results);
  return !count ? CLI_EXIT_FATAL : rc_report;
}

const cli_command cli_bench = {
    .name = "bench",
    .usage = "--model PATH [options]",
    .summary = "Measure throughput and latency over engines, precisions, batches, TTA copies "
               "and graphs.",
    .details = "Columns: images/s and copies/s of the throughput phase; TFLOP/s from the model's\n"
               "FLOP count; latency of one batch per call (p50/p90/p99/p99.9, ms; device mode: GPU\n"
               "time of one replay); and, per batch of the throughput phase, GPU milliseconds copying\n"
               "in, computing and copying out, and the host's own milliseconds.",
    .options = bench_options,
    .max_positional = 0,
    .run = run_bench,
};
