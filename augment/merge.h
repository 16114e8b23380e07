/* The merge of an image's N softmax outputs (one per augmented copy) into one result and one
   probability vector. Modes (ttp_merge):
     mean   the mean of the N vectors (the default);
     vote   each copy votes for its most probable class; the vector is the share of votes, and
            a tie between classes goes to the one of higher mean probability;
     max    each class's highest probability over the copies, normalised to sum to 1;
     gmean  the geometric mean of the copies' probabilities (floored at 1e-30 so that one copy's
            zero does not erase a class), normalised to sum to 1.
   The class is the vector's most probable (the lowest index on a tie), or the vote's winner;
   the spread is the population standard deviation of that class's probability over the
   copies. Sums are taken in double. */
#ifndef TTP_AUGMENT_MERGE_H
#define TTP_AUGMENT_MERGE_H

#include "ttapipe.h"

/* probs: copies x classes; scratch: 2 x classes doubles; merged: classes floats (written). */
void aug_merge(ttp_merge mode, const float* probs, int copies, int classes, double* scratch,
               float* merged, ttp_result* result);

#endif
