// The 'assemble' job of the chunking threads (chunk-threads.ts appends this to
// chunk-file-worker-source.ts; the same caveats: not type-checked, so it stays small): a file written
// from spans of the store's files, each span checked against its hash as it passes, then fsynced.
//
//  {id, op: 'assemble', out, mode, spans: [{file, offset, size, hash}]}: creates `out` (O_EXCL, mode),
//  copies each span in order, BLAKE3 of each compared with its hash; answers {size} once the file is
//  fsynced, or {error} (with code 'CONTENT_CORRUPT' for a span that is not its hash) after removing
//  `out`.
//
// Why a thread: a pulled 500 MiB dataset was read back through the store's verifying streams on the
// event loop (a hash per byte there, 1 MiB stream pieces) and piped into the working-tree file; here
// the bytes are read, hashed and written by one thread in large blocks, and the event loop only waits.

export const ASSEMBLE_WORKER_SOURCE = `
const ASSEMBLE_BLOCK = 4 << 20;

function runAssemble(job) {
  let out = null;
  const inputs = new Map();
  const hasher = new Blake3Hasher();
  try {
    out = fs.openSync(job.out, 'wx', job.mode);
    const buf = Buffer.allocUnsafe(ASSEMBLE_BLOCK);
    let at = 0;
    for (const span of job.spans) {
      let fd = inputs.get(span.file);
      if (fd === undefined) {
        fd = fs.openSync(span.file, 'r');
        inputs.set(span.file, fd);
      }
      hasher.reset();
      for (let done = 0; done < span.size; ) {
        const want = Math.min(buf.length, span.size - done);
        const n = fs.readSync(fd, buf, 0, want, span.offset + done);
        if (n === 0) throw Object.assign(new Error('a stored object ends early: ' + span.hash), { code: 'CONTENT_CORRUPT' });
        const piece = buf.subarray(0, n);
        hasher.update(piece);
        writeAt(out, piece, at);
        at += n;
        done += n;
      }
      const actual = 'blake3:' + hasher.digest('hex');
      if (actual !== span.hash) throw Object.assign(new Error('Stored content does not match its hash ' + span.hash + ' (it hashes to ' + actual + ')'), { code: 'CONTENT_CORRUPT' });
    }
    fs.fsyncSync(out);
    fs.closeSync(out);
    out = null;
    return { size: at };
  } catch (err) {
    if (out !== null) {
      try {
        fs.closeSync(out);
      } catch {
        // the unlink below still runs
      }
    }
    // Only a file this job created is removed (EEXIST: someone else's).
    if (err === null || typeof err !== 'object' || err.code !== 'EEXIST' || err.syscall !== 'open') {
      try {
        fs.rmSync(job.out, { force: true });
      } catch {
        // left for the caller's cleanup of its temp directory
      }
    }
    return { error: describe(err) };
  } finally {
    for (const fd of inputs.values()) fs.closeSync(fd);
  }
}
`;
