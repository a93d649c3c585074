// Extended attributes (issue 39 item 4): the reply to an xattr request asked for a length, and the
// xattr calls on the backing directory's files (ignored names), which keep theirs in that filesystem.
// The requests themselves come in through fuse_ll.c like any other.
#include <sys/xattr.h>
#include "fuse_ll.h"

static double num_arg(napi_env env, napi_value v) {
  double d = 0;
  napi_get_value_double(env, v, &d);
  return d;
}

static napi_value int_value(napi_env env, long n) {
  napi_value out;
  napi_create_double(env, (double)n, &out);
  return out;
}

// lgetxattr(2), or with no name llistxattr(2), into data: the length (copied when it fits; when it
// does not, asked again for the length alone), or -errno.
static ssize_t get_or_list(const char *path, const char *name, void *data, size_t len) {
  ssize_t n = name == NULL ? llistxattr(path, data, len) : lgetxattr(path, name, data, len);
  if (n < 0 && errno == ERANGE) n = name == NULL ? llistxattr(path, NULL, 0) : lgetxattr(path, name, NULL, 0);
  return n < 0 ? -errno : n;
}

// backingGetxattr(path, name, buffer) and backingListxattr(path, buffer): get_or_list's answer.
// Synchronous: one syscall on the daemon's own disk, like the journal's appends.
static napi_value js_backing_get_or_list(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int listing = argc < 3;
  char *path = string_arg(env, argv[0]);
  char *name = listing ? NULL : string_arg(env, argv[1]);
  void *data = NULL;
  size_t len = 0;
  CHECK(napi_get_buffer_info(env, argv[listing ? 1 : 2], &data, &len));
  ssize_t n = (path == NULL || (!listing && name == NULL)) ? -ENOMEM : get_or_list(path, name, data, len);
  free(path);
  free(name);
  return int_value(env, (long)n);
}

// backingSetxattr(path, name, value, flags): 0 or -errno.
static napi_value js_backing_setxattr(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char *path = string_arg(env, argv[0]);
  char *name = string_arg(env, argv[1]);
  void *data = NULL;
  size_t len = 0;
  CHECK(napi_get_buffer_info(env, argv[2], &data, &len));
  int result = (path == NULL || name == NULL) ? -ENOMEM : lsetxattr(path, name, data, len, (int)num_arg(env, argv[3]));
  if (result < 0 && path != NULL && name != NULL) result = -errno;
  free(path);
  free(name);
  return int_value(env, result);
}

// backingRemovexattr(path, name): 0 or -errno.
static napi_value js_backing_removexattr(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char *path = string_arg(env, argv[0]);
  char *name = string_arg(env, argv[1]);
  int result = (path == NULL || name == NULL) ? -ENOMEM : lremovexattr(path, name);
  if (result < 0 && path != NULL && name != NULL) result = -errno;
  free(path);
  free(name);
  return int_value(env, result);
}

// replyXattr(id, size): the answer to a getxattr or listxattr asked with size 0 (how long the value is).
static napi_value js_reply_xattr(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  double id = num_arg(env, argv[0]);
  fuse_req_t req = slot_take(id);
  napi_value out;
  napi_get_boolean(env, req != NULL, &out);
  if (req != NULL) fuse_reply_xattr(req, (size_t)num_arg(env, argv[1]));
  return out;
}

// capsInUse(handle): from now on the kernel's security.capability questions go to JS (fuse_ll.c ll_getxattr).
static napi_value js_caps_in_use(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mount_t *m = mount_of(env, argv[0]);
  if (m != NULL && !m->destroyed) m->caps_in_use = 1;
  return NULL;
}

void define_xattr_exports(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"capsInUse", NULL, js_caps_in_use, NULL, NULL, NULL, napi_enumerable, NULL},
    {"replyXattr", NULL, js_reply_xattr, NULL, NULL, NULL, napi_enumerable, NULL},
    {"backingGetxattr", NULL, js_backing_get_or_list, NULL, NULL, NULL, napi_enumerable, NULL},
    {"backingListxattr", NULL, js_backing_get_or_list, NULL, NULL, NULL, napi_enumerable, NULL},
    {"backingSetxattr", NULL, js_backing_setxattr, NULL, NULL, NULL, napi_enumerable, NULL},
    {"backingRemovexattr", NULL, js_backing_removexattr, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}
