/* Class names of a model, from a labels.txt file or an ONNX model's "labels" metadata: one name
   a line ('\n' or "\r\n", a final newline optional), as many as the model has classes, none
   empty, no control characters. */
#ifndef TTP_MODEL_LABELS_H
#define TTP_MODEL_LABELS_H

#include "model.h"

/* Parses text (size bytes) into m->labels (m->classes names); refusals name `where`. */
ttp_status io_parse_labels(const char* where, const char* text, size_t size, model* m, ttp_err* e);

#endif
