// Who gets the capture pipeline's next free slot. In turn: the request for the file changed most
// recently on disk (its ctime), and the request that has waited longest.
//
// Most recent first, so a file written just now is read within a few captures even behind the
// thousands an rsync queued. First come, first served, it waited for all of them, and a content
// that lived a second was never versioned (issue 13 item 8). Ordering by when the request was made
// was not enough: under load the burst's own events keep arriving late, each newer than the request
// of a file written after the burst. A file's ctime is when it was last written or renamed, whatever
// times the writer set (rsync -a and cp -a keep the source's mtime).
//
// Longest waiting every other time, so a steady stream of fresh writes cannot starve what came first.

interface Waiter {
  resolve: () => void;
  /** ctime in µs; 0 for requests without a file (deletions, renames, the mount's staging files) */
  changedAt: number;
  seq: number;
  taken: boolean;
}

export class CaptureQueue {
  /** max-heap: most recently changed first, then the newest request */
  readonly #heap: Waiter[] = [];
  /** arrival order; entries the heap already took are skipped */
  #fifo: Waiter[] = [];
  #fifoHead = 0;
  #seq = 0;
  #size = 0;
  /** heap entries the FIFO side took (dropped when popped, or all at once: see #compactHeap) */
  #deadInHeap = 0;
  #freshNext = true;

  get size(): number {
    return this.#size;
  }

  /** Resolves when the request may run. */
  wait(changedAt = 0): Promise<void> {
    return new Promise((resolve) => {
      const waiter: Waiter = { resolve, changedAt, seq: this.#seq++, taken: false };
      this.#fifo.push(waiter);
      this.#push(waiter);
      this.#size += 1;
    });
  }

  /** A slot is free: lets the next request run (if any waits). */
  release(): void {
    if (this.#size === 0) return;
    const fresh = this.#freshNext;
    const waiter = fresh ? this.#takeFreshest() : this.#takeOldest();
    this.#freshNext = !fresh;
    waiter.taken = true;
    this.#size -= 1;
    if (this.#size === 0) {
      this.#heap.length = 0;
      this.#fifo = [];
      this.#fifoHead = 0;
      this.#deadInHeap = 0;
    } else if (!fresh && ++this.#deadInHeap > this.#size) {
      this.#compactHeap();
    }
    waiter.resolve();
  }

  /** Old entries the FIFO side took sink to the bottom of the heap and are never popped: drop them. */
  #compactHeap(): void {
    const live = this.#heap.filter((waiter) => !waiter.taken);
    this.#heap.length = 0;
    for (const waiter of live) this.#push(waiter);
    this.#deadInHeap = 0;
  }

  #takeOldest(): Waiter {
    for (;;) {
      const waiter = this.#fifo[this.#fifoHead++]!;
      // Compact now and then rather than shift() per take (linear in the queue's length).
      if (this.#fifoHead > 1024 && this.#fifoHead * 2 > this.#fifo.length) {
        this.#fifo = this.#fifo.slice(this.#fifoHead);
        this.#fifoHead = 0;
      }
      if (!waiter.taken) return waiter;
    }
  }

  #takeFreshest(): Waiter {
    for (;;) {
      const waiter = this.#pop();
      if (!waiter.taken) return waiter;
      this.#deadInHeap -= 1;
    }
  }

  static #before(a: Waiter, b: Waiter): boolean {
    return a.changedAt !== b.changedAt ? a.changedAt > b.changedAt : a.seq > b.seq;
  }

  #push(waiter: Waiter): void {
    const heap = this.#heap;
    heap.push(waiter);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!CaptureQueue.#before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #pop(): Waiter {
    const heap = this.#heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let best = i;
        if (left < heap.length && CaptureQueue.#before(heap[left]!, heap[best]!)) best = left;
        if (right < heap.length && CaptureQueue.#before(heap[right]!, heap[best]!)) best = right;
        if (best === i) break;
        [heap[i], heap[best]] = [heap[best]!, heap[i]!];
        i = best;
      }
    }
    return top;
  }
}
