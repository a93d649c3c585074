// Names of the temp files tools write before renaming them over their target (an atomic save). Both
// modes hold a NEW file with such a name for a longer quiet period (TEMP_SETTLE_MS) before versioning
// it: if it is renamed away meanwhile, the target gets the one version and the temp name none.
//
// Why hold, not ignore: these patterns also match real files (a `results.part` the user keeps, a
// `.config.backup`). Held, such a file is versioned a few seconds late; ignored, it would never be.
// Why only new paths: a tracked file with such a name is a file the user keeps; its saves stay fast.

/**
 * Quiet time before a new temp-named file is versioned. The normal settle delay (100 ms) covers a
 * save that renames at once; this covers tools that write, pause and then rename — Python's
 * `tempfile` + `os.replace` of a dataset that takes seconds to compute, MATLAB's save — for pauses
 * up to this long.
 */
export const TEMP_SETTLE_MS = 5_000;
/** A temp-named file written to without a pause this long is versioned anyway (a `*.tmp` log). */
export const TEMP_MAX_WAIT_MS = 60_000;

const TEMP_PATTERNS: readonly RegExp[] = [
  // Python tempfile (mkstemp, NamedTemporaryFile): "tmp" + 8 of [a-z0-9_], then the caller's suffix
  /^tmp[a-z0-9_]{8}(\.[^/]*)?$/,
  // file.tmp, file.h5.tmp, file.tmp.1234, file.tmp123 (many tools), file.temp
  /\.te?mp(\d*|\.[\w-]+)$/i,
  // rsync, mkstemp("XXXXXX") callers, git-annex and many others: .name.XXXXXX
  /^\.[^/]+\.[A-Za-z0-9_]{6}$/,
  // downloads in progress (curl -C / wget / browsers)
  /\.(part|partial|crdownload|download)$/i,
  // GLib's g_file_replace (gedit, GNOME apps)
  /^\.goutputstream-[A-Za-z0-9]+$/,
  // JetBrains IDEs' "safe write"
  /___jb_(tmp|old)___$/,
  // name.new, renamed over name once complete: a common hand-rolled convention
  /\.new$/,
];

/** True when the last component of `path` ('/'-separated) looks like a tool's temp file. */
export function isTempName(path: string): boolean {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return TEMP_PATTERNS.some((pattern) => pattern.test(name));
}
