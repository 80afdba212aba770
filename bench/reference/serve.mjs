// A plain node:http front for the MA2H reference Hub (autnmy/ma2h-protocol `reference/`: an
// in-memory TypeScript Hub, no persistence), so `ma2h-bench submit` can load it exactly as it
// loads ma2h-hub — the comparison in docs/BENCHMARKS.md. Ours, not the reference's: it maps
// `POST /v1/messages` onto `Hub.submit` and answers everything else 404.
//
//   REFERENCE_DIR=/path/to/ma2h-protocol/reference PORT=8099 BENCH_KEY=k \
//     node --import "$REFERENCE_DIR/node_modules/tsx/dist/esm/index.mjs" bench/reference/serve.mjs
//
// (scripts/bench-reference.sh does all of it.)
import http from "node:http";
import { pathToFileURL } from "node:url";

const dir = process.env.REFERENCE_DIR;
if (!dir) throw new Error("REFERENCE_DIR: the reference/ directory of autnmy/ma2h-protocol");
const { Hub, HubError } = await import(pathToFileURL(`${dir}/src/hub.ts`).href);
const hub = new Hub({ signingKey: "bench-signing-key-0123456789abcdef", baseUrl: "http://127.0.0.1" });
const auth = `Bearer ${process.env.BENCH_KEY ?? "bench-key"}`;
const port = Number(process.env.PORT ?? 8099);

// The §8.5 statuses of the reference's error classes (anything else: 422).
const STATUS = { validation: 400, auth: 401, forbidden: 403, not_found: 404, conflict: 409, gone: 410, rate: 429 };

function reply(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

http
  .createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/v1/messages") return reply(res, 404, { error: { code: "not_found" } });
    if (req.headers.authorization !== auth) return reply(res, 401, { error: { code: "unauthenticated" } });
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      try {
        reply(res, 202, hub.submit(JSON.parse(Buffer.concat(chunks).toString("utf8"))));
      } catch (e) {
        if (e instanceof HubError) return reply(res, STATUS[e.status] ?? 422, { error: { code: e.code, message: e.message } });
        reply(res, 400, { error: { code: "validation_error", message: String(e) } });
      }
    });
  })
  .listen(port, "127.0.0.1", () => console.log(`reference hub listening on http://127.0.0.1:${port}`));
