// Strata's content-defined chunker, algorithm "fastcdc-gear64-v1" (the JS twin is
// engine/datasets/gear-chunker-js.ts; test/dataset-chunker.test.ts checks that both cut at exactly the
// same offsets). This addon only finds cut points; hashing stays in @napi-rs/blake-hash.
//
// The algorithm (any change to it needs a new algorithm name, because manifests record the name):
//  - Gear table: G[i] = the (i+1)-th output of splitmix64 seeded with 0x5354524154413634 ("STRATA64").
//  - Per chunk starting at s: h = 0; bytes at relative index r < minSize are skipped (FastCDC cut-point
//    skipping); for r = minSize .. maxSize-1: h = (h << 1) + G[byte] (mod 2^64), then a cut after
//    this byte (chunk length r + 1) if the top `bits` bits of h are all zero, where bits =
//    log2(avgSize) + 1 while r < avgSize and log2(avgSize) - 1 from there on (FastCDC 2020
//    normalization, level 1; engine/datasets/chunker-params.ts says why not level 2). At
//    r = maxSize - 1 the chunk is cut regardless.
//  - The HIGH bits are tested because bit k of a gear hash depends on the last k+1 bytes only: the top
//    bits see a 64-byte window, low bits a few bytes.
//  - Streaming: state is (h, length of the open chunk, absolute position), so a chunk may span any
//    number of pushed buffers and the cuts do not depend on how the input is split.
//
// Speed (2.45 GHz EPYC, gcc 12 -O3 -funroll-loops): the scan loop runs at ~2.2 GB/s; it is bound by the
// two loads per byte (input byte + table entry), so 4 interleaved hash lanes measured no faster
// (2.1-2.2 GB/s) and were not kept. With minSize = avgSize/4, ~1/5 of the bytes are skipped.
#include <node_api.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ALGORITHM "fastcdc-gear64-v1"
#define GEAR_SEED 0x5354524154413634ULL

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

typedef struct {
  // Each chunker holds its own copy of the table (2 KiB, built in ~1 µs): no global state shared by the
  // worker threads that load this addon.
  uint64_t gear[256];
  uint64_t min_size, avg_size, max_size;
  // Cut when h < limit, i.e. when the top `bits` bits of h are zero (limit = 2^(64 - bits)).
  uint64_t limit_strict, limit_loose;
  uint64_t h;
  uint64_t len;  // bytes of the open chunk consumed so far
  uint64_t pos;  // bytes consumed since the stream started
} chunker_t;

// Returns the number of bytes consumed up to and including the cut byte, or 0 if there is no cut in
// p[0, n). The hash is stored back either way.
static size_t scan(const uint64_t *gear, const uint8_t *p, size_t n, uint64_t *hp, uint64_t limit) {
  uint64_t h = *hp;
  for (size_t i = 0; i < n; i++) {
    h = (h << 1) + gear[p[i]];
    if (__builtin_expect(h < limit, 0)) {
      *hp = h;
      return i + 1;
    }
  }
  *hp = h;
  return 0;
}

// Feeds p[0, n); writes the absolute end offset of every chunk that closes into cuts (capacity
// n / min_size + 1 is enough: every chunk closed here except the first is longer than min_size).
// Returns the count.
static size_t chunker_push(chunker_t *c, const uint8_t *p, size_t n, double *cuts) {
  size_t count = 0;
  size_t i = 0;
  while (i < n) {
    size_t left = n - i;
    if (c->len < c->min_size) {
      uint64_t skip = c->min_size - c->len;
      if (skip > left) skip = left;
      c->len += skip;
      i += skip;
      continue;
    }
    uint64_t limit;
    uint64_t span;
    if (c->len < c->avg_size) {
      limit = c->limit_strict;
      span = c->avg_size - c->len;
    } else {
      limit = c->limit_loose;
      span = c->max_size - c->len;
    }
    if (span > left) span = left;
    size_t k = scan(c->gear, p + i, (size_t)span, &c->h, limit);
    size_t used = k ? k : (size_t)span;
    i += used;
    c->len += used;
    if (k || c->len == c->max_size) {
      cuts[count++] = (double)(c->pos + i);
      c->len = 0;
      c->h = 0;
    }
  }
  c->pos += n;
  return count;
}

static int log2_exact(uint64_t v) {
  int b = 0;
  while ((1ULL << b) < v) b++;
  return (1ULL << b) == v ? b : -1;
}

// Same rules as engine/datasets/chunker-params.ts; repeated so a direct caller cannot feed nonsense.
static int is_size(double v) { return v >= 0 && v <= 1073741824.0 && v == floor(v); }

static const char *check_params(double min, double avg, double max) {
  if (!is_size(min) || !is_size(avg) || !is_size(max)) return "chunker sizes must be integers from 0 to 2^30";
  if (min < 64) return "minSize must be at least 64";
  int bits = log2_exact((uint64_t)avg);
  if (bits < 8 || bits > 28) return "avgSize must be a power of two from 256 to 2^28";
  if (!(min < avg && avg < max)) return "chunker sizes must satisfy minSize < avgSize < maxSize";
  return NULL;
}

#define CALL(env, expr)                                                          \
  do {                                                                           \
    if ((expr) != napi_ok) {                                                     \
      const napi_extended_error_info *info = NULL;                               \
      napi_get_last_error_info((env), &info);                                    \
      bool pending = false;                                                      \
      napi_is_exception_pending((env), &pending);                                \
      if (!pending)                                                              \
        napi_throw_error((env), NULL,                                            \
                         info && info->error_message ? info->error_message       \
                                                     : "Node-API call failed");  \
      return NULL;                                                               \
    }                                                                            \
  } while (0)

static void finalize_chunker(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  free(data);
}

// new Chunker(minSize, avgSize, maxSize)
static napi_value chunker_new(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_value self;
  CALL(env, napi_get_cb_info(env, info, &argc, argv, &self, NULL));
  double v[3];
  for (int k = 0; k < 3; k++) {
    napi_valuetype type = napi_undefined;
    if (k < (int)argc) CALL(env, napi_typeof(env, argv[k], &type));
    if (type != napi_number) {
      napi_throw_type_error(env, NULL, "Chunker(minSize, avgSize, maxSize) takes three numbers");
      return NULL;
    }
    CALL(env, napi_get_value_double(env, argv[k], &v[k]));
  }
  const char *problem = check_params(v[0], v[1], v[2]);
  if (problem) {
    napi_throw_type_error(env, NULL, problem);
    return NULL;
  }
  chunker_t *c = calloc(1, sizeof *c);
  if (!c) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  uint64_t state = GEAR_SEED;
  for (int i = 0; i < 256; i++) c->gear[i] = splitmix64(&state);
  c->min_size = (uint64_t)v[0];
  c->avg_size = (uint64_t)v[1];
  c->max_size = (uint64_t)v[2];
  int bits = log2_exact(c->avg_size);
  c->limit_strict = 1ULL << (64 - (bits + 1));
  c->limit_loose = 1ULL << (64 - (bits - 1));
  if (napi_wrap(env, self, c, finalize_chunker, NULL, NULL) != napi_ok) {
    free(c);
    napi_throw_error(env, NULL, "napi_wrap failed");
    return NULL;
  }
  return self;
}

static chunker_t *unwrap(napi_env env, napi_value self) {
  void *data = NULL;
  if (napi_unwrap(env, self, &data) != napi_ok || !data) {
    napi_throw_type_error(env, NULL, "not a Chunker");
    return NULL;
  }
  return data;
}

static napi_value to_array(napi_env env, const double *cuts, size_t count) {
  napi_value array;
  CALL(env, napi_create_array_with_length(env, count, &array));
  for (size_t k = 0; k < count; k++) {
    napi_value num;
    CALL(env, napi_create_double(env, cuts[k], &num));
    CALL(env, napi_set_element(env, array, (uint32_t)k, num));
  }
  return array;
}

// chunker.push(bytes: Uint8Array) -> number[]: absolute end offsets of the chunks this input closed.
static napi_value chunker_push_js(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value arg;
  napi_value self;
  CALL(env, napi_get_cb_info(env, info, &argc, &arg, &self, NULL));
  chunker_t *c = unwrap(env, self);
  if (!c) return NULL;
  bool is_typed = false;
  if (argc >= 1) CALL(env, napi_is_typedarray(env, arg, &is_typed));
  napi_typedarray_type type = napi_int8_array;
  size_t length = 0;
  void *data = NULL;
  if (is_typed) CALL(env, napi_get_typedarray_info(env, arg, &type, &length, &data, NULL, NULL));
  if (!is_typed || type != napi_uint8_array) {
    napi_throw_type_error(env, NULL, "push() takes a Uint8Array");
    return NULL;
  }
  // Stack room for the common case (a few MiB per push, chunks >= 64 bytes would need more).
  double local[64] = {0};
  size_t capacity = length / c->min_size + 1;
  double *cuts = capacity <= 64 ? local : calloc(capacity, sizeof *cuts);
  if (!cuts) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  size_t count = chunker_push(c, data, length, cuts);
  napi_value result = to_array(env, cuts, count);
  if (cuts != local) free(cuts);
  return result;
}

// chunker.finish() -> number[]: the end of the last, partial chunk (if any); the chunker then starts a
// new stream at offset 0.
static napi_value chunker_finish_js(napi_env env, napi_callback_info info) {
  napi_value self;
  CALL(env, napi_get_cb_info(env, info, NULL, NULL, &self, NULL));
  chunker_t *c = unwrap(env, self);
  if (!c) return NULL;
  double end = (double)c->pos;
  size_t count = c->len > 0 ? 1 : 0;
  c->h = 0;
  c->len = 0;
  c->pos = 0;
  return to_array(env, &end, count);
}

napi_status define_allocate(napi_env env, napi_value exports);  // allocate.c
napi_status define_lock(napi_env env, napi_value exports);      // lock.c

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor methods[] = {
      {"push", NULL, chunker_push_js, NULL, NULL, NULL, napi_default, NULL},
      {"finish", NULL, chunker_finish_js, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_value cls;
  CALL(env, napi_define_class(env, "Chunker", NAPI_AUTO_LENGTH, chunker_new, NULL, 2, methods, &cls));
  napi_value algorithm;
  CALL(env, napi_create_string_utf8(env, ALGORITHM, NAPI_AUTO_LENGTH, &algorithm));
  CALL(env, napi_set_named_property(env, exports, "Chunker", cls));
  CALL(env, napi_set_named_property(env, exports, "algorithm", algorithm));
  CALL(env, define_allocate(env, exports));
  CALL(env, define_lock(env, exports));
  return exports;
}

NAPI_MODULE_INIT() { return init(env, exports); }
