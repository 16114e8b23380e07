/* Class names: see labels.h. */
#include "labels.h"

#include <stdlib.h>
#include <string.h>

ttp_status io_parse_labels(const char* where, const char* text, size_t size, model* m, ttp_err* e) {
  m->labels = calloc((size_t)m->classes, sizeof *m->labels);
  if (!m->labels) return ERR_NOMEM(e, (size_t)m->classes * sizeof *m->labels);
  ttp_status s = TTP_OK;
  int line = 0;
  const char* p = text;
  const char* end = p + size;
  while (s == TTP_OK && p < end) {
    const char* nl = memchr(p, '\n', (size_t)(end - p));
    const char* stop = nl ? nl : end;
    size_t len = (size_t)(stop - p);
    if (len && p[len - 1] == '\r') len--;
    line++;
    if (line > m->classes) {
      s = ERR(e, TTP_ERR_FORMAT, "%s: more than %d lines for the model's %d classes", where,
              m->classes, m->classes);
      break;
    }
    for (size_t i = 0; i < len && s == TTP_OK; i++)
      if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
        s = ERR(e, TTP_ERR_FORMAT, "%s: line %d: control character 0x%02x", where, line,
                (unsigned char)p[i]);
    if (s == TTP_OK && len == 0) s = ERR(e, TTP_ERR_FORMAT, "%s: line %d is empty", where, line);
    if (s == TTP_OK) {
      char* name = malloc(len + 1);
      if (!name) {
        s = ERR_NOMEM(e, len + 1);
        break;
      }
      memcpy(name, p, len);
      name[len] = '\0';
      m->labels[m->label_count++] = name;
    }
    p = stop + 1;
  }
  if (s == TTP_OK && m->label_count != m->classes)
    s = ERR(e, TTP_ERR_FORMAT, "%s: %d names for the model's %d classes", where, m->label_count,
            m->classes);
  return s;
}
