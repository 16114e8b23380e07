/* Result writers: CSV quoting per RFC 4180 (paths and labels with commas, quotes, line breaks),
   JSON Lines escaping (quotes, backslashes, control characters, bytes that are not UTF-8), the
   top-k and probability columns, and error rows whose status drops the path the message
   repeats. The expected text is written out here in full. The CSV numbers, which the writer
   formats itself: printf's "%.7f" byte for byte, on floats of every kind (random bit patterns,
   exact ties of the 8th decimal, the largest below 1, tiny and subnormal ones, negative ones and
   -0, 10^9 and beyond, infinities, NaN). And rows reach the stream whole, a flush at a time. */
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
              "\"bad\xff\n.png\",corrupt image (x),,,\n");
  free(csv);
  csv = render(p, TTP_FORMAT_CSV, 3, 1);
  expect_text("csv top-3 probs", csv,
              "path,status,class,label,probability,class_2,label_2,probability_2,class_3,label_3,"
              "probability_3,spread,p_zero,p_one,\"p_two, \"\"2\"\"\",p_three,p_four,p_five,p_six,"
              "p_seven,p_eight,p_nin\xc3\xa9\n"
              "\"dir/a,b \"\"c\"\".png\",ok,2,\"two, \"\"2\"\"\",0.6000000,6,six,0.2000000,1,one,"
              "0.0500000,0.1250000,0.0100000,0.0500000,0.6000000,0.0200000,0.0300000,0.0100000,"
              "0.2000000,0.0400000,0.0200000,0.0200000\n"
              "\"bad\xff\n.png\",corrupt image (x),,,,,,,,,,,,,,,,,,,,\n"); /* 22 columns */
  free(csv);
  char* json = render(p, TTP_FORMAT_JSONL, 2, 0);
  expect_text("jsonl", json,
              "{\"path\":\"dir/a,b \\\"c\\\".png\",\"status\":\"ok\",\"class\":2,\"label\":\"two, "
              "\\\"2\\\"\",\"probability\":0.600000024,\"top\":[{\"class\":2,\"label\":\"two, "
              "\\\"2\\\"\",\"probability\":0.600000024},{\"class\":6,\"label\":\"six\","
              "\"probability\":0.200000003}]}\n"
              "{\"path\":\"bad\\u00ff\\n.png\",\"status\":\"corrupt image (x)\",\"class\":null,"
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
  ttp_writer* w;
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_writer_open(p, stdout, TTP_FORMAT_CSV, 11, 0, &w, error, sizeof error) ==
            TTP_ERR_INVALID_ARGUMENT, "top-11 of 10 classes accepted");
  EXPECT_MESSAGE(error, "top-k must be 1..10");
  ttp_close(p);
  test_remove_tree(dir);
  printf("writer: CSV and JSON Lines rows as specified\n");
  return 0;
}
