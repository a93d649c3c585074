// The bytes Buffer's allocators hand out while a task runs: how the tests of reused read buffers see
// that a push or a capture did not allocate a new buffer per read.

export async function bufferBytesAllocatedDuring(task: () => Promise<void>): Promise<number> {
  let allocated = 0;
  const names = ['alloc', 'allocUnsafe', 'allocUnsafeSlow'] as const;
  const real = names.map((name) => Buffer[name]);
  names.forEach((name, i) => {
    const original = real[i]! as (size: number, ...rest: unknown[]) => Buffer;
    (Buffer as unknown as Record<string, unknown>)[name] = (size: number, ...rest: unknown[]) => {
      allocated += size;
      return original.call(Buffer, size, ...rest);
    };
  });
  try {
    await task();
  } finally {
    names.forEach((name, i) => {
      (Buffer as unknown as Record<string, unknown>)[name] = real[i];
    });
  }
  return allocated;
}
