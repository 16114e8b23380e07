/* Fuzz target: the cudnn engine's plan cache file (pipeline/plan_cache.h: plan_cache_read). The
   input is the file, read for the identity "fuzz GPU" (the seeds' own). Beyond what the
   sanitizers see: an ignored file has no entries and a one-line note naming it; an accepted
   one's entries are within the format's ranges, and written back they read back the same, bit
   for bit. */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "pipeline/plan_cache.h"

static plan_entry got[PLAN_MAX], again[PLAN_MAX];

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* path = fuzz_temp_path("plans");
  fuzz_write(path, data, size);
  int count = -1;
  char note[512] = "";
  const int r = plan_cache_read(path, "fuzz GPU", got, PLAN_MAX, &count, note, sizeof note);
  if (r != 1) {
    FUZZ_ASSERT(r == -1 && count == 0 && note[0] && !strchr(note, '\n') && strstr(note, path),
                "ignored: %d, %d entries, note %s", r, count, note);
    return 0;
  }
  FUZZ_ASSERT(count >= 0 && count <= PLAN_MAX, "%d entries", count);
  for (int i = 0; i < count; i++)
    FUZZ_ASSERT(got[i].algo >= 0 && got[i].math >= 0 && isfinite(got[i].ms), "entry %d", i);
  const char* back = fuzz_temp_path("plans.back");
  FUZZ_ASSERT(plan_cache_write(back, "fuzz GPU", got, count, note, sizeof note) == 0, "%s", note);
  int count_again = -1;
  FUZZ_ASSERT(plan_cache_read(back, "fuzz GPU", again, PLAN_MAX, &count_again, note,
                              sizeof note) == 1 && count_again == count, "%s", note);
  FUZZ_ASSERT(memcmp(got, again, (size_t)count * sizeof *got) == 0, "written and read back differ");
  return 0;
}
