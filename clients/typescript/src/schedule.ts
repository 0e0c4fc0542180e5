// Durable delayed messages (ScheduleService): schedule them, and a subscriber that runs a handler
// per delivered message and acks it.
//
// Delivery is at least once: a handler can see a message again (after a failure, a crash before
// the Ack, or a handler slower than the ack timeout, whose late Ack is then refused).

import { EventEmitter } from "node:events";
import { ClientReadableStream, status } from "@grpc/grpc-js";
import { Client, stubFor } from "./client";
import {
  AckRequest,
  AckResponse,
  ScheduleRequest,
  ScheduleResponse,
  ScheduleServiceClient,
  SubscribeResponse,
} from "./gen/baton/v1/schedule";
import { duration, isLeaseLost, isServiceError, pushbackMs, sleep, unary } from "./rpc";
import { Logger, ShutdownError } from "./worker";

/** One delivery: id, payload, deliverAt, deliveryCount, token. */
export type Message = SubscribeResponse;

export interface ScheduleOptions {
  /** Due after this many ms (Redis clock). */
  delayMs?: number;
  /** Due at this instant. Neither: at once. */
  deliverAt?: Date;
  /** Idempotency key: scheduling again while the first message is not yet acked returns its id. */
  key?: string;
}

/** Schedules and cancels messages. */
export class Scheduler {
  readonly client: ScheduleServiceClient;
  private readonly owned: boolean;

  /**
   * @param target a Client (its channel, token and TLS; left open), "host:port" (a plaintext
   *   channel of its own, closed by close()) or a generated ScheduleServiceClient (left open).
   */
  constructor(target: Client | string | ScheduleServiceClient) {
    ({ stub: this.client, owned: this.owned } = stubFor(target, ScheduleServiceClient, (c) => c.schedules));
  }

  /**
   * Persists a message for `receiver` (a string payload is sent as UTF-8). Resolves with its id,
   * deliverAt and `created` (false when the key matched a message not yet acked: same id).
   */
  schedule(receiver: string, payload: Uint8Array | string, options: ScheduleOptions = {}): Promise<ScheduleResponse> {
    if (options.delayMs !== undefined && options.deliverAt !== undefined) {
      return Promise.reject(new TypeError("give delayMs or deliverAt, not both"));
    }
    const request: ScheduleRequest = {
      receiver,
      payload: typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload),
      key: options.key ?? "",
      delay: options.delayMs !== undefined ? duration(Math.max(0, options.delayMs)) : undefined,
      deliverAt: options.deliverAt,
    };
    return unary(this.client.schedule.bind(this.client), request, { timeoutMs: 10_000 });
  }

  /** Removes a scheduled or in-flight message; false if there is no such message. */
  async cancel(receiver: string, id: string): Promise<boolean> {
    try {
      await unary(this.client.cancel.bind(this.client), { receiver, id }, { timeoutMs: 10_000 });
      return true;
    } catch (err) {
      if (isServiceError(err) && err.code === status.NOT_FOUND) return false;
      throw err;
    }
  }

  close(): void {
    if (this.owned) this.client.close();
  }
}

/** Handles one delivery. Resolving acks it; rejecting leaves it for redelivery after the ack timeout. */
export type MessageHandler = (message: Message, signal: AbortSignal) => Promise<void>;

export interface SubscriberOptions {
  /** Most handlers running at once, and the server's bound on unacked messages (default 1). */
  maxInFlight?: number;
  /** How long stop() lets running handlers finish before aborting them (default 10 000 ms). */
  shutdownGraceMs?: number;
  /** Longest pause between two subscribes (default 5 000 ms). */
  maxBackoffMs?: number;
  logger?: Logger;
}

export interface SubscriberEvents {
  /** A handler rejected: the message is not acked and comes back after the ack timeout. */
  failed: [message: Message, error: unknown];
  /** A Subscribe stream is open (the server answered it). */
  subscribed: [];
  /** The stream ended (error undefined: the server shut down) or failed; subscribing again in delayMs. */
  disconnected: [error: unknown, delayMs: number];
}

interface Running {
  abort: AbortController;
  done: Promise<void>;
}

/**
 * Subscribes to one receiver as one consumer and runs the handler per delivery, at most
 * `maxInFlight` at once.
 *
 * - The handler resolves: the message is acked (an Ack refused as LEASE_LOST — the handler
 *   outlived the ack timeout and the message went out again — is logged, counted in lateAcks).
 * - The handler rejects: the message is not acked; Baton delivers it again after its ack timeout
 *   (it keeps one of this consumer's maxInFlight places until then). Emits `failed`.
 * - The stream ends (the server shut down) or fails: emits `disconnected` and subscribes again
 *   after a backoff (the server's pushback hint, else 100 ms doubling up to maxBackoffMs, back to
 *   100 ms after a delivery), until stop(). INVALID_ARGUMENT is not retried: run() rejects.
 * - stop(): stops reading at once; running handlers get shutdownGraceMs to finish (acked when they
 *   resolve), then their signal aborts (reason ShutdownError) and they get as long again to
 *   settle; a handler that ignores its signal is abandoned. Unacked messages come back after the
 *   ack timeout.
 */
export class Subscriber extends EventEmitter<SubscriberEvents> {
  readonly client: ScheduleServiceClient;
  /** Handled and acked, handler failures, acks refused, subscribes after the first. */
  acked = 0;
  failed = 0;
  lateAcks = 0;
  reconnects = 0;
  private readonly owned: boolean;
  private readonly options: Required<SubscriberOptions>;
  private readonly stopping = new AbortController();
  private readonly running = new Set<Running>();
  private freed: (() => void) | undefined;
  private stream: ClientReadableStream<SubscribeResponse> | undefined;

  /**
   * @param target a Client (its channel, token and TLS; left open), "host:port" (a plaintext
   *   channel of its own, closed when run() ends) or a generated ScheduleServiceClient (left open).
   */
  constructor(
    target: Client | string | ScheduleServiceClient,
    readonly receiver: string,
    readonly consumerId: string,
    private readonly handler: MessageHandler,
    options: SubscriberOptions = {},
  ) {
    super();
    ({ stub: this.client, owned: this.owned } = stubFor(target, ScheduleServiceClient, (c) => c.schedules));
    this.options = {
      maxInFlight: Math.max(1, options.maxInFlight ?? 1),
      shutdownGraceMs: Math.max(0, options.shutdownGraceMs ?? 10_000),
      maxBackoffMs: Math.max(100, options.maxBackoffMs ?? 5_000),
      logger: options.logger ?? { warn: (m) => console.warn(`baton subscriber ${this.consumerId}: ${m}`) },
    };
  }

  /** Asks run() to stop (see the class doc); before run(), run() then resolves at once. */
  stop(): void {
    this.stopping.abort(new ShutdownError());
    this.stream?.cancel();
    this.freed?.();
  }

  /** Subscribes and handles deliveries until stop(); resolves once handlers are done. */
  async run(): Promise<void> {
    try {
      await this.subscribeLoop();
    } finally {
      this.stop();
      const grace = this.options.shutdownGraceMs;
      await this.settle(grace);
      for (const r of this.running) r.abort.abort(new ShutdownError());
      await this.settle(grace);
      if (this.owned) this.client.close();
    }
  }

  private async settle(ms: number): Promise<void> {
    if (this.running.size === 0) return;
    const timer = new AbortController();
    await Promise.race([Promise.allSettled([...this.running].map((r) => r.done)), sleep(ms, timer.signal)]);
    timer.abort();
  }

  private async subscribeLoop(): Promise<void> {
    const { signal } = this.stopping;
    let backoff = 100;
    let first = true;
    while (!signal.aborted) {
      if (!first) this.reconnects++;
      first = false;
      const stream = this.client.subscribe({
        receiver: this.receiver,
        consumerId: this.consumerId,
        maxInFlight: this.options.maxInFlight,
      });
      this.stream = stream;
      stream.once("metadata", () => this.emit("subscribed"));
      let failure: unknown;
      try {
        for await (const message of stream as AsyncIterable<SubscribeResponse>) {
          backoff = 100;
          // A free place first (the server keeps to maxInFlight too, but a redelivery to this
          // consumer can come while a slow handler still holds its message).
          while (this.running.size >= this.options.maxInFlight && !signal.aborted) {
            await new Promise<void>((resolve) => (this.freed = resolve));
          }
          if (signal.aborted) break;
          this.start(message);
        }
      } catch (err) {
        failure = err;
      } finally {
        this.stream = undefined;
        stream.cancel();
      }
      if (signal.aborted) return;
      if (isServiceError(failure) && failure.code === status.INVALID_ARGUMENT) throw failure;
      const delay = pushbackMs(failure) ?? backoff;
      if (failure === undefined) this.options.logger.warn(`subscription of ${this.receiver} ended (server shutdown); subscribing again`);
      else this.options.logger.warn(`subscription of ${this.receiver} failed: ${describe(failure)}; subscribing again in ${delay} ms`);
      this.emit("disconnected", failure, delay);
      await sleep(delay, signal);
      backoff = Math.min(backoff * 2, this.options.maxBackoffMs);
    }
  }

  private start(message: Message): void {
    const run: Running = { abort: new AbortController(), done: Promise.resolve() };
    this.running.add(run);
    run.done = (async () => {
      try {
        await this.handler(message, run.abort.signal);
      } catch (err) {
        if (run.abort.signal.aborted) {
          this.options.logger.warn(`handler of ${this.receiver}/${message.id} aborted (stopping); not acked`);
          return;
        }
        this.failed++;
        this.options.logger.warn(`handler of ${this.receiver}/${message.id} (delivery ${message.deliveryCount}) failed: ${describe(err)}; `
          + "not acked, Baton delivers it again after its ack timeout");
        try {
          this.emit("failed", message, err);
        } catch (listenerErr) {
          this.options.logger.warn(`a failed listener threw: ${describe(listenerErr)}`);
        }
        return;
      }
      await this.ack(message);
    })().finally(() => {
      this.running.delete(run);
      const freed = this.freed;
      this.freed = undefined;
      freed?.();
    });
  }

  private async ack(message: Message): Promise<void> {
    const request: AckRequest = { receiver: this.receiver, id: message.id, token: message.token };
    for (let attempt = 0; ; attempt++) {
      try {
        await unary<AckRequest, AckResponse>(this.client.ack.bind(this.client), request, { timeoutMs: 10_000 });
        this.acked++;
        return;
      } catch (err) {
        if (isServiceError(err) && err.code === status.UNAVAILABLE && attempt < 2) {
          await sleep(pushbackMs(err) ?? 200 * (attempt + 1));
          continue;
        }
        if (isLeaseLost(err)) {
          this.lateAcks++;
          this.options.logger.warn(`ack of ${this.receiver}/${message.id} token ${message.token} refused: the message was delivered `
            + "again (handler slower than the ack timeout)");
        } else {
          this.options.logger.warn(`ack of ${this.receiver}/${message.id} failed: ${describe(err)}`);
        }
        return;
      }
    }
  }
}

function describe(err: unknown): string {
  if (isServiceError(err)) return `${status[err.code]} ${err.details}`;
  return err instanceof Error ? err.message : String(err);
}
