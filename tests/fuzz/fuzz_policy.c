/* Fuzz target: TTA policy files (ttp_read_tta_policy: classify/eval/bench --tta-policy). The
   input is the file. Beyond what the sanitizers see: a refusal is one line naming the file; an
   accepted policy is within ttp_open's ranges (a pipeline opens with it: checked through the
   writer, which must give a file that reads back to the same values, bit for bit). */
#include <string.h>

#include "fuzz.h"
#include "ttapipe.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* path = fuzz_temp_path("tta.policy");
  fuzz_write(path, data, size);
  ttp_tta t, again;
  ttp_tta_init(&t);
  char error[512] = "";
  ttp_status s = ttp_read_tta_policy(path, &t, error, sizeof error);
  if (s != TTP_OK) {
    FUZZ_ASSERT(error[0] && !strchr(error, '\n') && strstr(error, path) == error,
                "refusal: %s", error);
    return 0;
  }
  FUZZ_ASSERT(t.copies >= 1 && t.copies <= 64 && t.shift >= 0 && t.shift <= 16 &&
                  t.contrast_min <= t.contrast_max && t.noise >= 0 && t.noise <= 1,
              "accepted out of range");
  const char* back = fuzz_temp_path("back.policy");
  FUZZ_ASSERT(ttp_write_tta_policy(back, &t, "fuzz", error, sizeof error) == TTP_OK, "%s", error);
  FUZZ_ASSERT(ttp_read_tta_policy(back, &again, error, sizeof error) == TTP_OK, "%s", error);
  FUZZ_ASSERT(memcmp(&t, &again, sizeof t) == 0, "written and read back differs");
  return 0;
}
