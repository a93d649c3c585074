/**
 * A fair readers–writer lock, per engine instance. Content writes hold it shared from the moment their
 * bytes enter the store until their version record commits; garbage collection holds it exclusively
 * while it re-checks and deletes candidates. So GC can never delete an object that a write has just
 * stored or deduplicated against but not yet referenced. Fair: once an exclusive request waits, new
 * shared requests queue behind it, so a write storm cannot starve GC (and GC's critical section is
 * short, so it cannot starve writes either).
 */
export interface RwLock {
  shared<T>(fn: () => Promise<T>): Promise<T>;
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
}

export function createRwLock(): RwLock {
  let readers = 0;
  let writer = false;
  const queue: Array<{ exclusive: boolean; grant: () => void }> = [];

  function pump(): void {
    while (queue.length > 0) {
      const next = queue[0]!;
      if (next.exclusive) {
        if (readers > 0 || writer) return;
        writer = true;
      } else {
        if (writer) return;
        readers += 1;
      }
      queue.shift();
      next.grant();
    }
  }

  function acquire(exclusive: boolean): Promise<void> {
    return new Promise((grant) => {
      queue.push({ exclusive, grant });
      pump();
    });
  }

  return {
    async shared(fn) {
      await acquire(false);
      try {
        return await fn();
      } finally {
        readers -= 1;
        pump();
      }
    },
    async exclusive(fn) {
      await acquire(true);
      try {
        return await fn();
      } finally {
        writer = false;
        pump();
      }
    },
  };
}
