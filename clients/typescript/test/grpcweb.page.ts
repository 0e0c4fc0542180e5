// The page side of grpcweb.browser.ts, bundled for the browser by esbuild: Baton RPCs over
// gRPC-Web with fetch(), the messages encoded and decoded by the generated ts-proto codecs, a
// server stream (WatchPool) read frame by frame from the response's ReadableStream.
import { GetPoolRequest, GetPoolResponse, OfferRequest, OfferResponse, WatchPoolRequest, WatchPoolResponse } from "../src/gen/baton/v1/claim";

// The page's globals (this package compiles without DOM types).
declare const document: any;
declare const window: any;

/** A gRPC-Web frame: flags (0: a message), the length (big-endian), the message. */
function frame(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.length);
  new DataView(out.buffer).setUint32(1, message.length);
  out.set(message, 5);
  return out;
}

/** The frames of a gRPC-Web response body, each as soon as it has arrived whole. */
async function* frames(body: ReadableStream<Uint8Array>): AsyncGenerator<{ trailers: boolean; data: Uint8Array }> {
  const reader = body.getReader();
  let buf = new Uint8Array(0);
  try {
    for (;;) {
      while (buf.length >= 5) {
        const len = new DataView(buf.buffer, buf.byteOffset).getUint32(1);
        if (buf.length < 5 + len) break;
        yield { trailers: (buf[0] & 0x80) !== 0, data: buf.slice(5, 5 + len) };
        buf = buf.slice(5 + len);
      }
      const { done, value } = await reader.read();
      if (done) return;
      const next = new Uint8Array(buf.length + value.length);
      next.set(buf);
      next.set(value, buf.length);
      buf = next;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

function post(base: string, path: string, message: Uint8Array, token: string): Promise<Response> {
  return fetch(base + path, {
    method: "POST",
    headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1", authorization: `Bearer ${token}` },
    body: frame(message),
  });
}

/** A gRPC status from a trailers frame ("grpc-status:0\r\n...") or the response headers. */
function statusOf(response: Response, trailers?: Uint8Array): { code: number; message: string } {
  const lines = trailers ? new TextDecoder().decode(trailers).split("\r\n") : [];
  const field = (name: string) =>
    lines.find((l) => l.toLowerCase().startsWith(name + ":"))?.slice(name.length + 1).trim() ?? response.headers.get(name) ?? "";
  return { code: Number(field("grpc-status") || "-1"), message: decodeURIComponent(field("grpc-message")) };
}

/** One unary call: the decoded answer, or an error naming the status. */
async function unary<T>(base: string, path: string, message: Uint8Array, token: string, decode: (b: Uint8Array) => T): Promise<T> {
  const response = await post(base, path, message, token);
  let answer: T | undefined;
  let trailers: Uint8Array | undefined;
  for await (const f of frames(response.body!)) {
    if (f.trailers) trailers = f.data;
    else answer = decode(f.data);
  }
  const status = statusOf(response, trailers);
  if (status.code !== 0) throw new Error(`${path}: grpc-status ${status.code}: ${status.message}`);
  return answer!;
}

function show(text: string) {
  const line = document.createElement("pre");
  line.textContent = text;
  document.getElementById("log").appendChild(line);
}

/** Offer, GetPool, then WatchPool read message by message while the page offers another. */
async function run(base: string, token: string, pool: string) {
  const offer = (id: string) => unary(base, "/baton.v1.ClaimService/Offer",
    OfferRequest.encode({ pool, resources: [{ id, attributes: { gpu: "a100" } }], requestId: "" }).finish(), token, OfferResponse.decode);
  const offered = await offer("gpu-1");
  show(`Offer gpu-1 → ${JSON.stringify(OfferResponse.toJSON(offered))}`);
  const got = await unary(base, "/baton.v1.ClaimService/GetPool", GetPoolRequest.encode({ pool }).finish(), token, GetPoolResponse.decode);
  show(`GetPool → idle ${got.status?.idle}`);

  const watch = await post(base, "/baton.v1.ClaimService/WatchPool", WatchPoolRequest.encode({ pool }).finish(), token);
  const idle: number[] = [];
  for await (const f of frames(watch.body!)) {
    if (f.trailers) throw new Error(`WatchPool ended: grpc-status ${statusOf(watch, f.data).code}`);
    const n = Number(WatchPoolResponse.decode(f.data).status?.idle ?? 0);
    idle.push(n);
    show(`WatchPool message ${idle.length} → idle ${n}`);
    if (idle.length === 1) await offer("gpu-2");
    if (n === 2) break; // leaving the loop cancels the stream
  }
  const denied = await unary(base, "/baton.v1.ClaimService/GetPool", GetPoolRequest.encode({ pool }).finish(), "wrong-token", GetPoolResponse.decode)
    .then(() => "allowed", (e: Error) => e.message);
  show(`GetPool with a wrong token → ${denied}`);
  return { offeredIdle: offered.idle, idleAfterOffer: Number(got.status?.idle), watched: idle, denied };
}

/** A call from a page whose origin Baton does not allow: the browser refuses it (CORS). */
async function refused(base: string, token: string, pool: string): Promise<string> {
  try {
    await post(base, "/baton.v1.ClaimService/Offer",
      OfferRequest.encode({ pool, resources: [{ id: "from-elsewhere", attributes: {} }], requestId: "" }).finish(), token);
    return "allowed";
  } catch (e) {
    show(`Offer from this origin → ${e}`);
    return String(e);
  }
}

window.grpcWeb = { run, refused };
