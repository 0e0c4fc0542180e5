// Durable delayed messages (ScheduleService): schedule them, and a subscriber that runs a handler
// per delivered message and acks it.
//
// Delivery is at least once: a handler can see a message again (after a failure, a crash before
// the Ack, or a handler slower than the ack timeout, whose late Ack is then refused).

import { EventEmitter } from "node:events";
import { ClientDuplexStream, status } from "@grpc/grpc-js";
import { context } from "@opentelemetry/api";
import { Client, stubFor } from "./client";
import {
  AckBatchRequest,
  AckBatchResponse,
  ReceiveAck,
  ReceiveRequest,
  ReceiveResponse,
  ScheduleRequest,
  ScheduleResponse,
  ScheduleServiceClient,
  SubscribeResponse,
} from "./gen/baton/v1/schedule";
import { backoffMs, describe, duration, idempotent, isServiceError, sleep, unary } from "./rpc";
import { endProcessSpan, startMessageSpan } from "./tracing";
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
  /**
   * With key: the key holds this many ms from the first Schedule, also after its message was
   * acked, cancelled or dead-lettered (at most the server's dedup.max_window_ms).
   */
  keyWindowMs?: number;
  /** The call's request id (default: a random one, the same for its retries). */
  requestId?: string;
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
    return schedule(this.client, receiver, payload, options);
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

/** Schedule (see Scheduler.schedule), retried with one request id (see idempotent). */
export function schedule(client: ScheduleServiceClient, receiver: string, payload: Uint8Array | string,
  options: ScheduleOptions = {}): Promise<ScheduleResponse> {
  if (options.delayMs !== undefined && options.deliverAt !== undefined) {
    return Promise.reject(new TypeError("give delayMs or deliverAt, not both"));
  }
  const request: ScheduleRequest = {
    requestId: options.requestId ?? "",
    receiver,
    payload: typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload),
    key: options.key ?? "",
    delay: options.delayMs !== undefined ? duration(Math.max(0, options.delayMs)) : undefined,
    deliverAt: options.deliverAt,
    keyWindow: options.keyWindowMs !== undefined ? duration(options.keyWindowMs) : undefined,
    // Empty: Baton takes the producer's trace context from the call's traceparent metadata,
    // which the Client adds from the active OpenTelemetry context.
    traceparent: "",
  };
  return idempotent(client.schedule.bind(client), request, { timeoutMs: 10_000 });
}

/** Handles one delivery. Resolving acks it; rejecting leaves it for redelivery after the ack timeout. */
export type MessageHandler = (message: Message, signal: AbortSignal) => Promise<void>;

export interface SubscriberOptions {
  /** Most handlers running at once, and the server's bound on unacked messages (default 1). */
  maxInFlight?: number;
  /** How long stop() lets running handlers finish before aborting them (default 10 000 ms). */
  shutdownGraceMs?: number;
  logger?: Logger;
}

export interface SubscriberEvents {
  /** A handler rejected: the message is not acked and comes back after the ack timeout. */
  failed: [message: Message, error: unknown];
  /** A Receive stream is open (the server answered it). */
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
 * The hot path is one Receive stream: Baton pushes due messages, and the acks of every handler
 * that resolved in one turn of the event loop go back on it in one message.
 *
 * - The handler resolves: the message is acked, counted in `acked` once Baton confirms it (an
 *   ack refused as stale — the handler outlived the ack timeout and the message went out again —
 *   is logged, counted in lateAcks). Acks a broken stream did not answer go again on the next
 *   one (when stopping between streams, by one AckBatch call).
 * - The handler rejects: the message is not acked; Baton delivers it again after its ack timeout
 *   (it keeps one of this consumer's maxInFlight places until then). Emits `failed`.
 * - The stream ends (the server shut down) or fails: emits `disconnected` and opens another
 *   after backoffMs (the server's retry hint, else a growing pause, reset by a
 *   delivery), until stop(). INVALID_ARGUMENT is not retried: run() rejects.
 * - stop(): stops reading at once; running handlers get shutdownGraceMs to finish (acked when they
 *   resolve; the stream is then half-closed and Baton's answers awaited), then their signal
 *   aborts (reason ShutdownError) and they get as long again to settle; a handler that ignores
 *   its signal is abandoned. Unacked messages come back after the ack timeout.
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
      logger: options.logger ?? { warn: (m) => console.warn(`baton subscriber ${this.consumerId}: ${m}`) },
    };
  }

  /** Asks run() to stop (see the class doc); before run(), run() then resolves at once. */
  stop(): void {
    this.stopping.abort(new ShutdownError());
  }

  /** Subscribes and handles deliveries until stop(); resolves once handlers are done. */
  async run(): Promise<void> {
    try {
      await this.receiveLoop();
    } finally {
      this.stop();
      await this.drainHandlers();
      if (this.owned) this.client.close();
    }
  }

  /** Running handlers get the shutdown grace, then their signal aborts and they get as long again. */
  private async drainHandlers(): Promise<void> {
    const grace = this.options.shutdownGraceMs;
    await this.settle(grace);
    for (const r of this.running) r.abort.abort(new ShutdownError());
    await this.settle(grace);
  }

  // --- the Receive stream ------------------------------------------------------------------

  /** Acks written and not yet answered, by id/token; resent: written again on a newer stream. */
  private readonly unanswered = new Map<string, { ack: ReceiveAck; resent: boolean }>();
  /** Acks of handlers that resolved, not yet written. */
  private pendingAcks: ReceiveAck[] = [];
  /** Deliveries waiting for a free place (a redelivery while a slow handler still runs). */
  private readonly waiting: Message[] = [];
  private flushing = false;
  private closing = false;
  private call: ClientDuplexStream<ReceiveRequest, ReceiveResponse> | undefined;

  /** Works on Receive streams until stop(). */
  private async receiveLoop(): Promise<void> {
    const { signal } = this.stopping;
    let attempt = 0;
    let first = true;
    while (!signal.aborted) {
      if (!first) this.reconnects++;
      const [result, failure] = await this.oneReceive();
      if (signal.aborted) break;
      if (isServiceError(failure) && (failure.code === status.INVALID_ARGUMENT || (first && failure.code === status.UNIMPLEMENTED))) {
        throw failure;
      }
      first = false;
      attempt = result === "served" ? 0 : attempt + 1;
      const delay = backoffMs(attempt, failure);
      if (failure === undefined) this.options.logger.warn(`receive stream of ${this.receiver} ended (server shutdown); opening another`);
      else this.options.logger.warn(`receive stream of ${this.receiver} failed: ${describe(failure)}; opening another in ${delay} ms`);
      this.emit("disconnected", failure, delay);
      await sleep(delay, signal);
    }
    if (!this.closing) {
      // Stopped between two streams: handlers settle, then every ack not answered goes by AckBatch.
      this.closing = true;
      await this.drainHandlers();
      await this.ackLeft();
    }
  }

  /** One stream, until it breaks or ends, or the subscriber stops (then its graceful end). */
  private oneReceive(): Promise<["served" | "broken" | "stopped", unknown]> {
    const { signal } = this.stopping;
    return new Promise((resolve) => {
      let served = false;
      let ended = false;
      const call = this.client.receive();
      this.call = call;
      const finish = (result: "served" | "broken" | "stopped", failure?: unknown) => {
        if (ended) return;
        ended = true;
        signal.removeEventListener("abort", onStop);
        if (this.call === call) this.call = undefined;
        resolve([result, failure]);
      };
      call.once("metadata", () => this.emit("subscribed"));
      call.on("data", (response: ReceiveResponse) => {
        served = true;
        this.answered(response);
        for (const message of response.messages) {
          // Stopping: not handled (it comes again after its ack timeout).
          if (signal.aborted) continue;
          if (this.running.size >= this.options.maxInFlight) this.waiting.push(message);
          else this.start(message);
        }
      });
      call.on("error", (err) => {
        finish(signal.aborted ? "stopped" : served ? "served" : "broken", err);
      });
      call.on("end", () => finish(signal.aborted ? "stopped" : served ? "served" : "broken"));
      const onStop = () => {
        void this.closeReceive(call).then(() => {
          const timer = setTimeout(() => { call.cancel(); finish("stopped"); }, 10_000);
          call.on("close", () => { clearTimeout(timer); finish("stopped"); });
        });
      };
      signal.addEventListener("abort", onStop, { once: true });
      // Acks a broken stream did not answer go again (it may have applied them), then those
      // never written.
      const acks: ReceiveAck[] = [];
      for (const u of this.unanswered.values()) {
        if (acks.length >= MAX_ACKS) break;
        u.resent = true;
        acks.push(u.ack);
      }
      acks.push(...this.takePending(MAX_ACKS - acks.length));
      call.write({
        open: { receiver: this.receiver, consumerId: this.consumerId, maxInFlight: this.options.maxInFlight },
        acks,
      });
    });
  }

  private answered(response: ReceiveResponse): void {
    for (const a of response.acked) {
      if (this.unanswered.delete(ackKey(a))) this.acked++;
    }
    for (const a of response.lost) {
      const u = this.unanswered.get(ackKey(a));
      this.unanswered.delete(ackKey(a));
      if (u && !u.resent) this.lateAck(a.id, a.token);
    }
  }

  /** Up to `most` acks not yet written, now remembered as unanswered. */
  private takePending(most: number): ReceiveAck[] {
    const acks = this.pendingAcks.splice(0, Math.max(0, most));
    for (const ack of acks) this.unanswered.set(ackKey(ack), { ack, resent: false });
    return acks;
  }

  /** Writes the acks of what resolved in this turn of the event loop, in one message. */
  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      // Between streams (or once closing) nothing is written: they go on the next stream.
      const call = this.closing ? undefined : this.call;
      if (!call || this.pendingAcks.length === 0) return;
      call.write({ open: undefined, acks: this.takePending(MAX_ACKS) });
      if (this.pendingAcks.length > 0) this.scheduleFlush();
    });
  }

  /** Stop on a live stream: handlers settle, their acks are written, the stream half-closed. */
  private async closeReceive(call: ClientDuplexStream<ReceiveRequest, ReceiveResponse>): Promise<void> {
    this.closing = true;
    await this.drainHandlers();
    while (this.pendingAcks.length > 0) call.write({ open: undefined, acks: this.takePending(MAX_ACKS) });
    call.end();
  }

  /** Acks no stream answered, by AckBatch calls (the subscriber is stopping). */
  private async ackLeft(): Promise<void> {
    this.takePending(this.pendingAcks.length);
    const left = [...this.unanswered.values()];
    this.unanswered.clear();
    for (let i = 0; i < left.length; i += MAX_ACKS) {
      const chunk = left.slice(i, i + MAX_ACKS);
      const request: AckBatchRequest = {
        acks: chunk.map(({ ack }) => ({ requestId: "", receiver: this.receiver, id: ack.id, token: ack.token })),
      };
      let response: AckBatchResponse;
      try {
        response = await unary<AckBatchRequest, AckBatchResponse>(this.client.ackBatch.bind(this.client), request, { timeoutMs: 10_000 });
      } catch (err) {
        this.options.logger.warn(`${left.length - i} acks of ${this.receiver} not sent (${describe(err)}); `
          + "those messages come again after their ack timeout");
        return;
      }
      response.results.forEach((r, j) => {
        if (!r.leaseLost) this.acked++;
        else if (!chunk[j].resent) this.lateAck(chunk[j].ack.id, chunk[j].ack.token);
      });
    }
  }

  private lateAck(id: string, token: bigint): void {
    this.lateAcks++;
    this.options.logger.warn(`ack of ${this.receiver}/${id} token ${token} refused: the message was delivered `
      + "again (handler slower than the ack timeout)");
  }

  private async settle(ms: number): Promise<void> {
    if (this.running.size === 0) return;
    const timer = new AbortController();
    await Promise.race([Promise.allSettled([...this.running].map((r) => r.done)), sleep(ms, timer.signal)]);
    timer.abort();
  }

  private start(message: Message): void {
    const run: Running = { abort: new AbortController(), done: Promise.resolve() };
    this.running.add(run);
    run.done = (async () => {
      // The handler runs inside its `process <receiver>` span, a child of the producer's
      // traceparent when the message has a valid one (see tracing.ts).
      const { span, context: spanContext } = startMessageSpan(this.receiver, message);
      try {
        await context.with(spanContext, () => this.handler(message, run.abort.signal));
      } catch (err) {
        endProcessSpan(span, undefined, { error: err });
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
      endProcessSpan(span, undefined);
      this.pendingAcks.push({ id: message.id, token: message.token });
      this.scheduleFlush();
    })().finally(() => {
      this.running.delete(run);
      const next = this.waiting.shift();
      if (next && !this.stopping.signal.aborted) this.start(next);
    });
  }

}

/** Acks in one message at most (the server's default limits.max_batch). */
const MAX_ACKS = 1000;

const ackKey = (a: ReceiveAck): string => `${a.id}/${a.token}`;
