/* ttapipe info: the build, the GPUs, and the model's layers with their shapes, parameters and
   FLOPs. */
#include <string.h>

#include "cli.h"

static const cli_option info_options[] = {
    CLI_PIPELINE_OPTIONS,
    {NULL, NULL, NULL},
};

static int run_info(const cli_args* a) {
  ttp_pipeline* p = NULL;
  ttp_tta tta;
  int rc = cli_open_pipeline(a, (cli_pipeline_defaults){.plan = TTP_PLAN_MEASURE}, &p, &tta);
  if (rc != CLI_EXIT_OK) return rc;
  const ttp_model_info* m = ttp_model(p);
  printf("build   %s\n", ttp_build_string());
  const char* engine = cli_get(a, "engine");
  if (cli_engine_on_host(engine)) /* a CPU engine's process never starts CUDA */
    printf("GPUs    not counted (engine %s runs on the CPU)\n", engine);
  else
    printf("GPUs    %d\n", ttp_gpu_count());
  printf("model   %s\n", cli_get(a, "model"));
  printf("input   %dx%dx%d, %d classes:", m->input_channels, m->input_rows, m->input_cols,
         m->classes);
  for (int k = 0; k < m->classes; k++) printf(" %s", ttp_class_label(p, k));
  printf("\nscaling ");
  int scaled = 0;
  for (int c = 0; c < m->input_channels; c++)
    scaled |= m->input_mean[c] != 0.0f || m->input_std[c] != 1.0f;
  if (!scaled) printf("none: the network sees pixel / 255");
  for (int c = 0; scaled && c < m->input_channels; c++)
    printf("%s(pixel / 255 - %g) / %g", c ? ", " : "the network sees ", m->input_mean[c],
           m->input_std[c]);
  int wide = 8; /* the name column: as wide as the longest name */
  for (int i = 0; i < m->layers; i++) {
    const int n = (int)strlen(ttp_layer(p, i)->name);
    if (n > wide) wide = n;
  }
  printf("\n\n%-3s %-*s %-11s %-9s %-30s %-12s %-12s %10s %10s\n", "#", wide, "name", "reads",
         "kind", "settings", "input", "output", "weights", "MFLOP");
  for (int i = 0; i < m->layers; i++) {
    const ttp_layer_info* l = ttp_layer(p, i);
    char in[32], out[32], reads[64] = "";
    snprintf(in, sizeof in, "%dx%dx%d", l->in_c, l->in_h, l->in_w);
    snprintf(out, sizeof out, "%dx%dx%d", l->out_c, l->out_h, l->out_w);
    for (int k = 0, at = 0; k < l->input_count && at < (int)sizeof reads - 12; k++) {
      if (l->inputs[k] < 0) at += snprintf(reads + at, sizeof reads - (size_t)at, "%simage", k ? "," : "");
      else at += snprintf(reads + at, sizeof reads - (size_t)at, "%s%d", k ? "," : "", l->inputs[k]);
    }
    printf("%-3d %-*s %-11s %-9s %-30s %-12s %-12s %10lld %10.3f\n", i, wide, l->name, reads,
           l->kind, l->detail, in, out, l->parameters, l->flops * 1e-6);
  }
  printf("%-3s %-*s %-11s %-9s %-30s %-12s %-12s %10lld %10.3f\n", "", wide, "total", "", "", "",
         "", "", m->parameters, m->flops * 1e-6);
  printf("\nactivations: %.1f KB a copy, tensors that are no longer read giving their room to "
         "later ones (%.1f KB if each had its own)", m->activation_bytes / 1024.0,
         m->activation_sum_bytes / 1024.0);
  char augmentation[256];
  cli_describe_tta(&tta, augmentation, sizeof augmentation);
  printf("\nper copy: %.3f MFLOP (2 per multiply-add of the conv and fc layers); %.1f KB of fp32 "
         "weights\n", m->flops * 1e-6, m->parameters * 4.0 / 1024.0);
  printf("tta: %s: %.3f MFLOP per image\n", augmentation, tta.copies * m->flops * 1e-6);
  ttp_close(p);
  return CLI_EXIT_OK;
}

const cli_command cli_info = {
    .name = "info",
    .usage = "--model PATH",
    .summary = "Show the build, the GPUs, and the model's layers with shapes, parameters and "
               "FLOPs per image.",
    .options = info_options,
    .max_positional = 0,
    .run = run_info,
};
