// Names that are not valid UTF-8 on the mount (issue 38 item 4), byte-exact. Linux names are bytes;
// JS gets names as strings, and napi_create_string_utf8 turns each stray byte into U+FFFD (a name
// nobody gave, shared by every name spoiled the same way). The project records such a name with each
// stray byte 0xHH as the private-use character U+EF00+0xHH (engine/raw-names.ts, docs/api.md#paths);
// this file is that map at the kernel's edge, so the mount shows and takes the very bytes watch mode
// and sync write to disk:
//   in  (a name in a request):  stray byte 0xHH -> U+EF00+0xHH (UTF-8: EE, BE|BF, 80|(HH & 3F));
//   out (a name in a readdir):  U+EF80-U+EFFF -> the byte it stands for.
// A name whose own text holds U+EF80-U+EFFF cannot be recorded without making two names one (as in
// watch mode, which lists such a file as not versioned): the mount refuses it (name_in gives NULL).
#include "fuse_ll.h"

// The length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, surrogates or code points above
// U+10FFFF, what JS's own decoder accepts), else 0 (s[0] is a stray byte). scanUtf8's rule.
static size_t sequence_length(const unsigned char *s) {
  unsigned char c = s[0];
  int n;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) n = 1;
  else if (c == 0xe0) { n = 2; lo = 0xa0; }
  else if (c == 0xed) { n = 2; hi = 0x9f; }
  else if (c >= 0xe1 && c <= 0xef) n = 2;
  else if (c == 0xf0) { n = 3; lo = 0x90; }
  else if (c >= 0xf1 && c <= 0xf3) n = 3;
  else if (c == 0xf4) { n = 3; hi = 0x8f; }
  else return 0;
  for (int k = 1; k <= n; k++) {
    unsigned char lo_k = k == 1 ? lo : 0x80, hi_k = k == 1 ? hi : 0xbf;
    if (s[k] < lo_k || s[k] > hi_k) return 0;  // a NUL stops here too
  }
  return (size_t)n + 1;
}

int utf8_valid(const char *text) {
  const unsigned char *s = (const unsigned char *)text;
  for (size_t i = 0; s[i] != 0;) {
    size_t n = sequence_length(s + i);
    if (n == 0) return 0;
    i += n;
  }
  return 1;
}

// U+EF80-U+EFFF in UTF-8: EE BE 80 .. EE BF BF.
static int is_reserved(const unsigned char *s) { return s[0] == 0xee && (s[1] == 0xbe || s[1] == 0xbf) && s[2] >= 0x80 && s[2] <= 0xbf; }

const char *name_in(const char *name, char *out, size_t outsz) {
  if (name == NULL) return NULL;
  const unsigned char *s = (const unsigned char *)name;
  int stray = 0;
  for (size_t i = 0; s[i] != 0;) {
    size_t n = sequence_length(s + i);
    if (n == 3 && is_reserved(s + i)) return NULL;
    if (n == 0) {
      stray = 1;
      n = 1;
    }
    i += n;
  }
  if (!stray) return name;  // nearly every name: passed on as it is
  size_t used = 0;
  for (size_t i = 0; s[i] != 0;) {
    size_t n = sequence_length(s + i);
    if (used + 4 > outsz) return NULL;
    if (n == 0) {
      out[used++] = (char)0xee;
      out[used++] = (char)(0xbe | ((s[i] >> 6) & 1));
      out[used++] = (char)(0x80 | (s[i] & 0x3f));
      i += 1;
    } else {
      memcpy(out + used, s + i, n);
      used += n;
      i += n;
    }
  }
  out[used] = 0;
  return out;
}

void name_out(char *name) {
  unsigned char *s = (unsigned char *)name;
  size_t w = 0;
  for (size_t r = 0; s[r] != 0;) {
    if (is_reserved(s + r)) {
      s[w++] = (unsigned char)(((s[r + 1] & 1) << 6) | 0x80 | (s[r + 2] & 0x3f));
      r += 3;
    } else {
      s[w++] = s[r++];
    }
  }
  s[w] = 0;
}
