/* What the CPU tests of test-time augmentation share: the validated spec of a ttp_tta, and a
   setting's refusal with its message. */
#ifndef TTP_TESTS_TTA_CHECKS_H
#define TTP_TESTS_TTA_CHECKS_H

#include "../common/check.h"
#include "augment/tta.h"

static inline aug_spec spec_of(const ttp_tta* t) {
  aug_spec s;
  ttp_merge merge;
  ttp_err e = {0};
  CHECK(aug_spec_from(t, &s, &merge, NULL, &e) == TTP_OK, "%s", e.message);
  return s;
}

static inline void expect_refused(ttp_tta t, const char* fragment) {
  aug_spec s;
  ttp_merge merge;
  ttp_err e = {0};
  CHECK(aug_spec_from(&t, &s, &merge, NULL, &e) == TTP_ERR_INVALID_ARGUMENT, "accepted (%s)",
        fragment);
  EXPECT_MESSAGE(e.message, fragment);
}

#endif
