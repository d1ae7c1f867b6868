// Events are sent in the background, as client-go's event recorder does: a reconcile that took a step goes on to
// write its status (and frees its worker) without waiting one more API round trip for the Event that tells of the
// step. Under load that round trip was a third of a step's requests (bench/README.md). Bounded: a few in flight,
// at most MAX_QUEUED waiting; past that new Events are dropped and counted (an API server that cannot take Events
// cannot take the status writes either, and those matter more). An Event that fails is logged, never retried.
import type { Logger, ManagementApi } from "../ports/index.ts";

/** Events waiting to be sent (client-go's broadcaster buffers 1,000). */
export const MAX_QUEUED_EVENTS = 1_000;
/** Events sent at once. */
export const EVENTS_IN_FLIGHT = 4;

type EventArgs = Parameters<ManagementApi["event"]>;

export class EventQueue {
  /** Events dropped because the queue was full, since the start. */
  dropped = 0;
  private readonly waiting: EventArgs[] = [];
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly send: ManagementApi["event"],
    private readonly log: Logger,
  ) {}

  /** Queues an Event; resolves at once (sending is not the caller's wait). */
  event(...args: EventArgs): Promise<void> {
    if (this.waiting.length >= MAX_QUEUED_EVENTS) {
      this.dropped++;
      // Said once per thousand, not once per Event: the log would be the next thing to flood.
      if (this.dropped % MAX_QUEUED_EVENTS === 1)
        this.log.warn(`dropping Events: ${MAX_QUEUED_EVENTS} wait to be sent (${this.dropped} dropped so far)`, {
          object: objectKey(args),
        });
      return Promise.resolve();
    }
    this.waiting.push(args);
    this.pump();
    return Promise.resolve();
  }

  /** Resolves once every queued Event has been sent or has failed (a stopping controller, tests). */
  idle(): Promise<void> {
    if (this.inFlight === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (this.inFlight < EVENTS_IN_FLIGHT && this.waiting.length > 0) {
      const args = this.waiting.shift() as EventArgs;
      this.inFlight++;
      this.send(...args)
        .catch((error: unknown) =>
          this.log.warn(`could not record an Event: ${error instanceof Error ? error.message : String(error)}`, {
            object: objectKey(args),
            reason: args[2],
          }),
        )
        .finally(() => {
          this.inFlight--;
          this.pump();
          if (this.inFlight === 0 && this.waiting.length === 0)
            for (const resolve of this.idleWaiters.splice(0)) resolve();
        });
    }
  }
}

function objectKey([controlPlane]: EventArgs): string {
  return `${controlPlane.metadata.namespace ?? "default"}/${controlPlane.metadata.name}`;
}
