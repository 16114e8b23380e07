/* Result writers: CSV quoting per RFC 4180 (paths and labels with commas and quotes), JSON Lines
   escaping (quotes, backslashes, control characters, bytes that are not UTF-8), the top-k and
   probability columns, and error rows whose status drops the path the message repeats. The
   expected text is written out here in full. The CSV numbers, which the writer formats itself:
   printf's "%.7f" byte for byte, on floats of every kind (random bit patterns, exact ties of
   the 8th decimal, the largest below 1, tiny and subnormal ones, negative ones and -0, 10^9 and
   beyond, infinities, NaN). And rows reach the stream whole, a flush at a time.

   Text that could drive a terminal or a spreadsheet (ttapipe.h, "Writing results"): CSV cells
   beginning with = + - @ TAB CR or an apostrophe, in paths, statuses and labels, with and
   without TTP_WRITE_CSV_FORMULAS; names that are control characters, C1 controls or not UTF-8,
   decoded back from both formats to their exact bytes, no two alike; messages holding ESC, C1
   and bytes that are not UTF-8 made printable (ttp_printable, the library's own messages), the
   path still dropped from the status. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

static char* render(ttp_pipeline* p, ttp_format format, int topk, int probs) {
  char* text = NULL;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  ttp_writer* w;
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_writer_open(p, f, format, topk, probs, &w, error, sizeof error) == TTP_OK, "%s", error);
  float v[10] = {0.01f, 0.05f, 0.6f, 0.02f, 0.03f, 0.01f, 0.2f, 0.04f, 0.02f, 0.02f};
  ttp_result r = {2, 0.6f, 0.125f};
  CHECK(ttp_writer_write(w, "dir/a,b \"c\".png", &r, v, NULL) == TTP_OK, "write");
  CHECK(ttp_writer_write(w, "bad\xff\n.png", NULL, NULL, "bad\xff\n.png: corrupt image (x)") ==
            TTP_OK, "write");
  CHECK(ttp_writer_write(w, "x.png", &r, NULL, NULL) == TTP_ERR_INVALID_ARGUMENT,
        "a result without probabilities was written");
  CHECK(ttp_writer_close(w) == TTP_OK, "close");
  fclose(f);
  return text;
}

/* Every number column of CSV rows with all probabilities against snprintf's "%.7f". */
static void check_numbers(ttp_pipeline* p) {
  enum { ROWS = 3001, PER_ROW = 12 }; /* probability, spread, ten classes */
  static float values[ROWS][PER_ROW];
  static const float special[] = {0.0f, -0.0f, 1.0f, 0.5f, 0.00390625f, 0.99999994f, 1e-8f,
                                  5e-8f, 4.9999997e-8f, 1.4e-45f, -0.25f, -3e-8f, 999999999.0f,
                                  1e9f, 3e38f, INFINITY, -INFINITY, NAN};
  uint64_t state = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < ROWS; i++)
    for (int k = 0; k < PER_ROW; k++) {
      state = state * 6364136223846793005u + 1442695040888963407u;
      uint32_t bits = (uint32_t)(state >> 32);
      float v;
      int kind = (int)(bits % 4);
      if (kind == 0) { /* any bit pattern below 2 in magnitude */
        bits &= 0xbfffffffu;
        memcpy(&v, &bits, sizeof v);
      } else if (kind == 1) { /* a tie of the 8th decimal or near one: m / 2^n */
        v = (float)((bits >> 8) % 4096) / (float)(1u << (bits % 13));
      } else if (kind == 2) { /* uniform in [0, 1) */
        v = (float)(bits >> 8) / 16777216.0f;
      } else {
        v = special[(bits >> 8) % (sizeof special / sizeof *special)];
      }
      values[i][k] = v;
    }
  char* text = NULL;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  ttp_writer* w;
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_writer_open(p, f, TTP_FORMAT_CSV, 1, 1, &w, error, sizeof error) == TTP_OK, "%s",
        error);
  for (int i = 0; i < ROWS; i++) {
    ttp_result r = {i % 2, values[i][0], values[i][1]}; /* labels without commas */
    CHECK(ttp_writer_write(w, "x.png", &r, values[i] + 2, NULL) == TTP_OK, "write");
  }
  CHECK(ttp_writer_close(w) == TTP_OK, "close");
  fclose(f);
  char* line = strchr(text, '\n') + 1; /* past the header */
  for (int i = 0; i < ROWS; i++) {
    char* end = strchr(line, '\n');
    CHECK(end, "row %d missing", i);
    *end = '\0';
    char* field = line;
    for (int skip = 0; skip < 4; skip++) field = strchr(field, ',') + 1; /* path,ok,class,label */
    for (int k = 0; k < PER_ROW; k++) {
      char* comma = strchr(field, ',');
      if (comma) *comma = '\0';
      char want[64];
      snprintf(want, sizeof want, "%.7f", (double)values[i][k]);
      CHECK(strcmp(field, want) == 0, "row %d value %d (%a): wrote %s, printf writes %s", i, k,
            (double)values[i][k], field, want);
      field = comma ? comma + 1 : field;
    }
    line = end + 1;
  }
  free(text);
}

/* Many rows, each against the same row assembled here: paths of random lengths up to 3,000 bytes
   (many of them quoted), error rows among them, and one path of 100,000 bytes. */
static void check_long_rows(ttp_pipeline* p) {
  test_rng rng = {77};
  char* text = NULL;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  ttp_writer* w;
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_writer_open(p, f, TTP_FORMAT_CSV, 1, 0, &w, error, sizeof error) == TTP_OK, "%s", error);
  enum { ROWS = 1999, LONG = 3001, HUGE_ROW = 777, HUGE = 100001 };
  char* path = malloc(HUGE + 1);
  char* want = malloc(2 * HUGE + 64);
  size_t expected_size = strlen("path,status,class,label,probability\n");
  char* expected = malloc((size_t)ROWS * (2 * LONG + 64) + 2 * HUGE + expected_size + 1);
  CHECK(path && want && expected, "out of memory");
  strcpy(expected, "path,status,class,label,probability\n");
  float v[10] = {0.01f, 0.05f, 0.6f, 0.02f, 0.03f, 0.01f, 0.2f, 0.04f, 0.02f, 0.02f};
  ttp_result r = {2, 0.6f, 0.125f};
  for (int i = 0; i < ROWS; i++) {
    int n = i == HUGE_ROW ? HUGE : test_int(&rng, 1, LONG), quoted = 0, failed = i % 7 == 3;
    for (int j = 0; j < n; j++) {
      int k = test_int(&rng, 0, 99);
      path[j] = k == 0 ? '"' : k == 1 ? ',' : (char)('a' + k % 26);
      quoted |= k < 2;
    }
    path[n] = '\0';
    size_t m = 0;
    if (quoted) want[m++] = '"';
    for (int j = 0; j < n; j++) {
      if (path[j] == '"') want[m++] = '"';
      want[m++] = path[j];
    }
    if (quoted) want[m++] = '"';
    m += (size_t)snprintf(want + m, 64, failed ? ",unreadable %d,,,\n"
                                               : ",ok,2,\"two, \"\"2\"\"\",0.6000000\n", i);
    memcpy(expected + expected_size, want, m + 1);
    expected_size += m;
    char message[64];
    snprintf(message, sizeof message, "unreadable %d", i);
    CHECK(ttp_writer_write(w, path, failed ? NULL : &r, failed ? NULL : v,
                           failed ? message : NULL) == TTP_OK, "write");
  }
  CHECK(ttp_writer_close(w) == TTP_OK, "close");
  fclose(f);
  CHECK(size == expected_size && memcmp(text, expected, size) == 0, "long rows differ (%zu bytes, "
        "want %zu)", size, expected_size);
  free(text);
  free(expected);
  free(want);
  free(path);
}

/* A stream that fails (/dev/full: no space): the row whose buffer could not be written and the
   close say so. */
static void check_failing_stream(ttp_pipeline* p) {
  FILE* f = fopen("/dev/full", "w");
  if (!f) return; /* not every system has it */
  ttp_writer* w;
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_writer_open(p, f, TTP_FORMAT_CSV, 1, 0, &w, error, sizeof error) == TTP_OK, "%s", error);
  float v[10] = {0.01f, 0.05f, 0.6f, 0.02f, 0.03f, 0.01f, 0.2f, 0.04f, 0.02f, 0.02f};
  ttp_result r = {2, 0.6f, 0.125f};
  ttp_status s = TTP_OK;
  for (int i = 0; i < 200000 && s == TTP_OK; i++)
    s = ttp_writer_write(w, "a/rather/long/path/to/an/image/file.png", &r, v, NULL);
  CHECK(s == TTP_ERR_IO, "200,000 rows to a full device: no write failed (%d)", (int)s);
  CHECK(ttp_writer_close(w) == TTP_ERR_IO, "a full device's close did not fail");
  fclose(f);
}

/* Rows reach the stream whole, a flush at a time: on an unbuffered file nothing of them before
   ttp_writer_flush (or 64 KiB of rows), and after any flush the file ends on a whole row, its
   rows those written, in order. */
static long file_lines(const char* path, size_t* size, int* torn) {
  FILE* f = fopen(path, "rb");
  CHECK(f, "%s: cannot read", path);
  long lines = 0;
  int c, last = '\n';
  *size = 0;
  while ((c = fgetc(f)) != EOF) lines += c == '\n', last = c, ++*size;
  fclose(f);
  *torn = last != '\n';
  return lines;
}

static void check_whole_rows(ttp_pipeline* p, const char* dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s", test_path(dir, "rows.csv"));
  FILE* f = fopen(path, "w");
  CHECK(f, "%s: cannot create", path);
  setvbuf(f, NULL, _IONBF, 0);
  ttp_writer* w;
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_writer_open(p, f, TTP_FORMAT_CSV, 1, 0, &w, error, sizeof error) == TTP_OK, "%s", error);
  float v[10] = {0.01f, 0.05f, 0.6f, 0.02f, 0.03f, 0.01f, 0.2f, 0.04f, 0.02f, 0.02f};
  ttp_result r = {2, 0.6f, 0.125f};
  char name[64];
  test_rng rng = {7};
  long rows = 0, flushes = 0, lines;
  size_t size;
  int torn;
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof name, "d/%0*d.png", test_int(&rng, 1, 29), i);
    CHECK(ttp_writer_write(w, name, &r, v, NULL) == TTP_OK, "row %d", i);
    rows++;
    if (i == 2) { /* three rows and the header: none of them in the file before a flush */
      file_lines(path, &size, &torn);
      CHECK(size == 0, "%zu bytes in the file before a flush", size);
    }
    if (test_int(&rng, 0, 96) == 0) {
      CHECK(ttp_writer_flush(w) == TTP_OK, "flush");
      flushes++;
    }
    if (i % 101 == 0) { /* whenever the file is read: whole rows, no more than written */
      lines = file_lines(path, &size, &torn);
      CHECK(!torn, "the file ends in a torn row after row %d (%zu bytes)", i, size);
      CHECK(lines <= rows + 1, "%ld lines for %ld rows", lines, rows);
    }
  }
  CHECK(flushes > 10, "the test flushed %ld times", flushes);
  CHECK(ttp_writer_flush(w) == TTP_OK, "flush");
  lines = file_lines(path, &size, &torn);
  CHECK(lines == rows + 1 && !torn, "%ld lines after a flush, %ld rows and a header", lines, rows);
  CHECK(ttp_writer_close(w) == TTP_OK, "close");
  fclose(f);
}

static void expect_text(const char* what, const char* got, const char* want) {
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "%s:\n--- got ---\n%s--- want ---\n%s", what, got, want);
    exit(1);
  }
}

/* Rows written to memory by a writer opened with columns and topk; each row an error row of
   paths[i] with errors[i], or (errors[i] NULL) an ok row of class 0 with probabilities v. */
static char* rows_of(ttp_pipeline* p, ttp_format format, int topk, int columns,
                     const char* const* paths, const char* const* errors, int count) {
  char* text = NULL;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  ttp_writer* w;
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_writer_open(p, f, format, topk, columns, &w, error, sizeof error) == TTP_OK, "%s",
        error);
  const float v[10] = {0.6f, 0.01f, 0.02f, 0.03f, 0.2f, 0.04f, 0.05f, 0.02f, 0.02f, 0.01f};
  const ttp_result r = {0, 0.6f, 0.125f};
  for (int i = 0; i < count; i++)
    CHECK(ttp_writer_write(w, paths[i], errors[i] ? NULL : &r, errors[i] ? NULL : v, errors[i]) ==
              TTP_OK, "write %d", i);
  CHECK(ttp_writer_close(w) == TTP_OK, "close");
  fclose(f);
  return text;
}

/* CSV cells that begin with = + - @ (OWASP's formula characters) get an apostrophe, and so does
   one that begins with an apostrophe; TAB and CR never begin a cell (written \x09, \x0d);
   TTP_WRITE_CSV_FORMULAS leaves the cells as they are, the escapes kept. Paths and statuses
   here; labels and the header's p_LABEL in check_formula_labels. */
static void check_formula_cells(ttp_pipeline* p) {
  static const char* const paths[] = {"=cmd|calc.png", "+SUM(1+1).png", "-x.png", "@SUM(A1).png",
                                      "\tx.png", "\rx.png", "'quote.png", "=a,b.png", "x=1.png",
                                      "plain.png"};
  static const char* const errors[] = {"=cmd|calc.png: -1 bytes", "+x", "-x.png: @home",
                                       "@SUM(A1).png: =HYPERLINK(\"http://x\")", "\tx.png: \tbad",
                                       "\rx.png: 'quoted'", "'quote.png: fine", "=a,b.png: +,",
                                       "x=1.png: =1", "'"};
  char* csv = rows_of(p, TTP_FORMAT_CSV, 1, 0, paths, errors, 10);
  expect_text("formula cells", csv,
              "path,status,class,label,probability\n"
              "'=cmd|calc.png,'-1 bytes,,,\n"
              "'+SUM(1+1).png,'+x,,,\n"
              "'-x.png,'@home,,,\n"
              "'@SUM(A1).png,\"'=HYPERLINK(\"\"http://x\"\")\",,,\n"
              "\\x09x.png,\\x09bad,,,\n"
              "\\x0dx.png,''quoted',,,\n"
              "''quote.png,fine,,,\n"
              "\"'=a,b.png\",\"'+,\",,,\n"
              "x=1.png,'=1,,,\n"
              "plain.png,'',,,\n");
  free(csv);
  csv = rows_of(p, TTP_FORMAT_CSV, 1, TTP_WRITE_CSV_FORMULAS, paths, errors, 10);
  expect_text("formula cells, TTP_WRITE_CSV_FORMULAS", csv,
              "path,status,class,label,probability\n"
              "=cmd|calc.png,-1 bytes,,,\n"
              "+SUM(1+1).png,+x,,,\n"
              "-x.png,@home,,,\n"
              "@SUM(A1).png,\"=HYPERLINK(\"\"http://x\"\")\",,,\n"
              "\\x09x.png,\\x09bad,,,\n"
              "\\x0dx.png,'quoted',,,\n"
              "'quote.png,fine,,,\n"
              "\"=a,b.png\",\"+,\",,,\n"
              "x=1.png,=1,,,\n"
              "plain.png,',,,\n");
  free(csv);
  /* JSON Lines has no formulas: the same strings either way. */
  char* json = rows_of(p, TTP_FORMAT_JSONL, 1, 0, paths, errors, 2);
  expect_text("formula cells in JSON", json,
              "{\"path\":\"=cmd|calc.png\",\"status\":\"-1 bytes\",\"class\":null,\"label\":null,"
              "\"probability\":null}\n"
              "{\"path\":\"+SUM(1+1).png\",\"status\":\"+x\",\"class\":null,\"label\":null,"
              "\"probability\":null}\n");
  char* same = rows_of(p, TTP_FORMAT_JSONL, 1, TTP_WRITE_CSV_FORMULAS, paths, errors, 2);
  expect_text("formula cells in JSON, TTP_WRITE_CSV_FORMULAS", same, json);
  free(json);
  free(same);
}

/* Labels that begin with formula characters or an apostrophe, hold a comma, a backslash, a C1
   control (U+009B, CSI) or not UTF-8: the rows' label cells and the header's p_LABEL. */
static void check_formula_labels(const char* dir) {
  const char* labels = "=SUM(1+1)\n+1\n-1\n@A1\n'q\nplain\n=a,b\nback\\slash\n\xc2\x9b[31m\n\xff\n";
  test_write_file(test_path(dir, "labels.txt"), labels, strlen(labels));
  ttp_pipeline* p = fixture_open(dir, TTP_ENGINE_CPU, NULL);
  static const char* const paths[] = {"a.png"};
  static const char* const errors[] = {NULL};
  char* csv = rows_of(p, TTP_FORMAT_CSV, 3, TTP_WRITE_PROBABILITIES, paths, errors, 1);
  expect_text("formula labels", csv,
              "path,status,class,label,probability,class_2,label_2,probability_2,class_3,label_3,"
              "probability_3,spread,p_=SUM(1+1),p_+1,p_-1,p_@A1,p_'q,p_plain,\"p_=a,b\","
              "p_back\\x5cslash,p_\\xc2\\x9b[31m,p_\\xff\n"
              "a.png,ok,0,'=SUM(1+1),0.6000000,4,''q,0.2000000,6,\"'=a,b\",0.0500000,0.1250000,"
              "0.6000000,0.0100000,0.0200000,0.0300000,0.2000000,0.0400000,0.0500000,0.0200000,"
              "0.0200000,0.0100000\n");
  free(csv);
  csv = rows_of(p, TTP_FORMAT_CSV, 3, TTP_WRITE_CSV_FORMULAS, paths, errors, 1);
  expect_text("formula labels, TTP_WRITE_CSV_FORMULAS", csv,
              "path,status,class,label,probability,class_2,label_2,probability_2,class_3,label_3,"
              "probability_3\n"
              "a.png,ok,0,=SUM(1+1),0.6000000,4,'q,0.2000000,6,\"=a,b\",0.0500000\n");
  free(csv);
  char* json = rows_of(p, TTP_FORMAT_JSONL, 10, 0, paths, errors, 1);
  CHECK(strstr(json, "\"label\":\"=SUM(1+1)\"") && strstr(json, "\"label\":\"'q\"") &&
            strstr(json, "\"label\":\"back\\\\slash\"") &&
            strstr(json, "\"label\":\"\\u009b[31m\"") && strstr(json, "\"label\":\"\\udcff\""),
        "JSON labels: %s", json);
  free(json);
  ttp_close(p);
}

/* A JSON string's bytes: the escapes the writer uses (\" \\ \n \u00XX and \udcHH, a byte that
   is not UTF-8) decoded, as Python's json.loads and os.fsencode do. */
static size_t json_decode(const char* s, char* out) {
  size_t n = 0;
  CHECK(*s == '"', "not a JSON string: %s", s);
  for (s++; *s != '"'; s++) {
    CHECK(*s, "an unterminated JSON string");
    if (*s != '\\') {
      out[n++] = *s;
      continue;
    }
    s++;
    if (*s == 'n') out[n++] = '\n';
    else if (*s == '"' || *s == '\\') out[n++] = *s;
    else {
      unsigned u;
      CHECK(*s == 'u' && sscanf(s + 1, "%4x", &u) == 1, "escape \\%c", *s);
      s += 4;
      if (u >= 0xdc80 && u <= 0xdcff) { /* surrogateescape */
        out[n++] = (char)(u - 0xdc00);
      } else if (u < 0x80) {
        out[n++] = (char)u;
      } else {
        CHECK(u < 0x800, "\\u%04x", u);
        out[n++] = (char)(0xc0 | u >> 6);
        out[n++] = (char)(0x80 | (u & 63));
      }
    }
  }
  return n;
}

/* A CSV path cell's bytes: the one apostrophe dropped, the quotes undone, each \xHH decoded. */
static size_t csv_decode(const char* s, size_t len, char* out) {
  char unquoted[512];
  size_t m = 0, n = 0;
  if (len && s[0] == '"') {
    for (size_t i = 1; i + 1 < len; i++) {
      unquoted[m++] = s[i];
      if (s[i] == '"') i++;
    }
  } else {
    memcpy(unquoted, s, len), m = len;
  }
  size_t i = m && unquoted[0] == '\'' ? 1 : 0;
  for (; i < m; i++) {
    unsigned byte;
    if (unquoted[i] == '\\') {
      CHECK(i + 3 < m && unquoted[i + 1] == 'x' && sscanf(unquoted + i + 2, "%2x", &byte) == 1,
            "a backslash that is no \\xHH in a CSV cell");
      out[n++] = (char)byte, i += 3;
    } else {
      CHECK((unsigned char)unquoted[i] >= 0x20 && unquoted[i] != 0x7f, "byte 0x%02x in a CSV cell",
            (unsigned char)unquoted[i]);
      out[n++] = unquoted[i];
    }
  }
  return n;
}

/* Names that are not UTF-8, control characters, C1 controls, their look-alikes: each row's path
   decodes back to its exact bytes, in JSON and in CSV; no two rows' paths are the same text. A
   file named with byte 0xff and one named "ÿ" (c3 bf) were one JSON path, "\u00ff". */
static void check_names(ttp_pipeline* p) {
  static const char* const names[] = {
      "\xff.png", "\xc3\xbf.png", "\\u00ff.png", "\\udcff.png", "\\xff.png", "a\x1b[2J.png",
      "a\\x1b[2J.png", "\xc2\x9b" "31m.png", "\x9b" "31m.png", "del\x7f.png", "\xed\xa0\x80.png",
      "\xf4\x90\x80\x80.png", "\xc0\xaf.png", "\xe6\x95\xb0.png", "tab\there,\"q\".png",
      "'=x.png", "=x.png", "\xe6\x95.png"};
  enum { N = sizeof names / sizeof names[0] };
  const char* errors[N];
  for (int i = 0; i < N; i++) errors[i] = "e";
  for (int format = 0; format < 2; format++) {
    char* text = rows_of(p, format ? TTP_FORMAT_JSONL : TTP_FORMAT_CSV, 1, 0, names, errors, N);
    char fields[N][512];
    size_t lengths[N];
    const char* line = format ? text : strchr(text, '\n') + 1;
    for (int i = 0; i < N; i++) {
      const char* end = strchr(line, '\n');
      CHECK(end, "row %d missing", i);
      const char* field = format ? line + strlen("{\"path\":") : line;
      const char* stop = format ? strstr(field, ",\"status\":") : strstr(field, ",e,,,");
      CHECK(stop && stop < end, "row %d: %.*s", i, (int)(end - line), line);
      lengths[i] = (size_t)(stop - field);
      memcpy(fields[i], field, lengths[i]);
      fields[i][lengths[i]] = '\0';
      char back[512];
      const size_t n = format ? json_decode(fields[i], back) : csv_decode(field, lengths[i], back);
      CHECK(n == strlen(names[i]) && memcmp(back, names[i], n) == 0,
            "%s: name %d does not decode back from %s", format ? "JSON" : "CSV", i, fields[i]);
      for (const char* c = line; c < end; c++) /* nothing a terminal obeys */
        CHECK((unsigned char)*c >= 0x20 && *c != 0x7f &&
                  !((unsigned char)c[0] == 0xc2 && (unsigned char)c[1] < 0xa0),
              "%s row %d: byte 0x%02x", format ? "JSON" : "CSV", i, (unsigned char)*c);
      line = end + 1;
    }
    for (int i = 0; i < N; i++)
      for (int j = 0; j < i; j++)
        CHECK(strcmp(fields[i], fields[j]) != 0, "%s: names %d and %d both give %s",
              format ? "JSON" : "CSV", j, i, fields[i]);
    if (format) {
      CHECK(strcmp(fields[0], "\"\\udcff.png\"") == 0 && strcmp(fields[1], "\"\xc3\xbf.png\"") == 0,
            "0xff and \xc3\xbf: %s, %s", fields[0], fields[1]);
    }
    free(text);
  }
}

/* Messages: ttp_printable; the library's own (a file list that cannot be opened, named with ESC,
   a C1 control and a byte that is not UTF-8); a status from such a message, the path dropped. */
static void check_messages(ttp_pipeline* p, const char* dir) {
  char out[256];
  const char* raw = "a\x1b[2Jb\xc2\x9b" "c\xff" "d \xc3\xa9 \xe6\x95\xb0\t\n\r\x7f\\";
  const char* want = "a\\x1b[2Jb\\xc2\\x9bc\\xffd \xc3\xa9 \xe6\x95\xb0\\x09\\x0a\\x0d\\x7f\\";
  size_t n = ttp_printable(raw, out, sizeof out);
  CHECK(n == strlen(want) && strcmp(out, want) == 0, "ttp_printable: %s (%zu), want %s", out, n,
        want);
  char again[256];
  CHECK(ttp_printable(out, again, sizeof again) == n && strcmp(again, out) == 0,
        "ttp_printable changed printable text: %s", again);
  /* Cut short: on a whole escape or character, the whole length returned. */
  CHECK(ttp_printable("ab\x1b" "cd", out, 6) == 8 && strcmp(out, "ab") == 0, "cut: %s", out);
  CHECK(ttp_printable("\xe6\x95\xb0\xe6\x95\xb0", out, 6) == 6 && strcmp(out, "\xe6\x95\xb0") == 0,
        "cut: %s", out);
  CHECK(ttp_printable("abc", NULL, 0) == 3 && ttp_printable(NULL, out, sizeof out) == 0 &&
            out[0] == '\0', "NULL");

  char path[2048];
  snprintf(path, sizeof path, "%s/no\x1b[2J\xc2\x9b\xff.txt", dir);
  char error[TTP_ERROR_SIZE];
  ttp_file_list l = {0};
  CHECK(ttp_read_file_list(path, 0, &l, error, sizeof error) == TTP_ERR_IO, "a missing list");
  ttp_file_list_free(&l);
  EXPECT_MESSAGE(error, "/no\\x1b[2J\\xc2\\x9b\\xff.txt: cannot open");
  for (const char* c = error; *c; c++)
    CHECK((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f, "byte 0x%02x in %s",
          (unsigned char)*c, error);

  const char* paths[] = {path, "a\x1b.png", "b.png"};
  const char* errors[] = {error, "a\x1b.png: corrupt image (PNG chunk \x1bXYZ, \xc2\x9b, \xff)",
                          "b.png: \x1b]0;title\x07"};
  char* csv = rows_of(p, TTP_FORMAT_CSV, 1, 0, paths, errors, 3);
  const char* rows = strchr(csv, '\n') + 1;
  CHECK(strstr(rows, "no\\x1b[2J\\xc2\\x9b\\xff.txt,cannot open: No such file or directory,,,\n"),
        "the library's message as a status: %s", rows);
  CHECK(strstr(rows, "a\\x1b.png,\"corrupt image (PNG chunk \\x1bXYZ, \\xc2\\x9b, \\xff)\",,,\n"),
        "a caller's message as a status: %s", rows);
  CHECK(strstr(rows, "b.png,\\x1b]0;title\\x07,,,\n"), "OSC as a status: %s", rows);
  free(csv);
  char* json = rows_of(p, TTP_FORMAT_JSONL, 1, 0, paths, errors, 3);
  CHECK(strstr(json, "{\"path\":\"a\\u001b.png\",\"status\":\"corrupt image (PNG chunk "
                     "\\\\x1bXYZ, \\\\xc2\\\\x9b, \\\\xff)\","), "JSON: %s", json);
  CHECK(strstr(json, "\\u001b[2J\\u009b\\udcff.txt\",\"status\":\"cannot open: "), "JSON: %s",
        json);
  free(json);
}

int main(void) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", test_make_dir());
  fixture_model_dir(dir, 2);
  const char* labels = "zero\none\ntwo, \"2\"\nthree\nfour\nfive\nsix\nseven\neight\nnin\xc3\xa9\n";
  test_write_file(test_path(dir, "labels.txt"), labels, strlen(labels));
  ttp_pipeline* p = fixture_open(dir, TTP_ENGINE_CPU, NULL);

  char* csv = render(p, TTP_FORMAT_CSV, 1, 0);
  expect_text("csv", csv,
              "path,status,class,label,probability\n"
              "\"dir/a,b \"\"c\"\".png\",ok,2,\"two, \"\"2\"\"\",0.6000000\n"
              "bad\\xff\\x0a.png,corrupt image (x),,,\n");
  free(csv);
  csv = render(p, TTP_FORMAT_CSV, 3, 1);
  expect_text("csv top-3 probs", csv,
              "path,status,class,label,probability,class_2,label_2,probability_2,class_3,label_3,"
              "probability_3,spread,p_zero,p_one,\"p_two, \"\"2\"\"\",p_three,p_four,p_five,p_six,"
              "p_seven,p_eight,p_nin\xc3\xa9\n"
              "\"dir/a,b \"\"c\"\".png\",ok,2,\"two, \"\"2\"\"\",0.6000000,6,six,0.2000000,1,one,"
              "0.0500000,0.1250000,0.0100000,0.0500000,0.6000000,0.0200000,0.0300000,0.0100000,"
              "0.2000000,0.0400000,0.0200000,0.0200000\n"
              "bad\\xff\\x0a.png,corrupt image (x),,,,,,,,,,,,,,,,,,,,\n"); /* 22 columns */
  free(csv);
  char* json = render(p, TTP_FORMAT_JSONL, 2, 0);
  expect_text("jsonl", json,
              "{\"path\":\"dir/a,b \\\"c\\\".png\",\"status\":\"ok\",\"class\":2,\"label\":\"two, "
              "\\\"2\\\"\",\"probability\":0.600000024,\"top\":[{\"class\":2,\"label\":\"two, "
              "\\\"2\\\"\",\"probability\":0.600000024},{\"class\":6,\"label\":\"six\","
              "\"probability\":0.200000003}]}\n"
              "{\"path\":\"bad\\udcff\\n.png\",\"status\":\"corrupt image (x)\",\"class\":null,"
              "\"label\":null,\"probability\":null,\"top\":null}\n");
  free(json);
  json = render(p, TTP_FORMAT_JSONL, 1, 1);
  CHECK(strstr(json, "\"spread\":0.125,\"probabilities\":[0.00999999978,0.0500000007,"), "%s", json);
  CHECK(strstr(json, ",\"spread\":null,\"probabilities\":null}"), "%s", json);
  free(json);

  check_numbers(p);
  check_long_rows(p);
  check_failing_stream(p);
  check_whole_rows(p, dir);
  check_formula_cells(p);
  check_names(p);
  check_messages(p, dir);
  ttp_writer* w;
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_writer_open(p, stdout, TTP_FORMAT_CSV, 11, 0, &w, error, sizeof error) ==
            TTP_ERR_INVALID_ARGUMENT, "top-11 of 10 classes accepted");
  EXPECT_MESSAGE(error, "top-k must be 1..10");
  ttp_close(p);
  check_formula_labels(dir);
  test_remove_tree(dir);
  printf("writer: CSV and JSON Lines rows as specified\n");
  return 0;
}
