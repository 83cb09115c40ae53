# The gateway → family transport with the product's necessary work and nothing else, both ways on
# one workerd (docs/benchmarks.md, "Transport, measured at the floor"):
#   :18783  fetch():  the front strips Authorization, adds the request context as a JSON header and
#           hands a new Request to the back over the service binding; the back reads the body,
#           calls the upstream and answers a new Response, streamed back through the front.
#   :18782  JS RPC with plain values (shared/worker/family-rpc.ts): the front reads the body text
#           and the headers into a plain object and passes them with the context; the back answers
#           status, headers and text, from which the front builds the Response.
# Run: ../../../node_modules/@cloudflare/workerd-linux-64/bin/workerd serve transport.capnp
# (the mock upstream on :18080: node ../../chat-mock-upstream.mjs 18080)
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "fetch-front", worker = (
      modules = [ (name = "fetch-front.js", esModule = embed "fetch-front.js") ],
      compatibilityDate = "2025-01-01",
      bindings = [ (name = "BACK", service = "fetch-back") ],
    )),
    (name = "fetch-back", worker = (
      modules = [ (name = "fetch-back.js", esModule = embed "fetch-back.js") ],
      compatibilityDate = "2025-01-01",
      bindings = [ (name = "UPSTREAM", text = "http://127.0.0.1:18080") ],
      globalOutbound = "net",
    )),
    (name = "rpc-front", worker = (
      modules = [ (name = "rpc-front.js", esModule = embed "rpc-front.js") ],
      compatibilityDate = "2025-01-01",
      bindings = [ (name = "BACK", service = "rpc-back") ],
    )),
    (name = "rpc-back", worker = (
      modules = [ (name = "rpc-back.js", esModule = embed "rpc-back.js") ],
      compatibilityDate = "2025-01-01",
      bindings = [ (name = "UPSTREAM", text = "http://127.0.0.1:18080") ],
      globalOutbound = "net",
    )),
    (name = "net", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [
    (name = "fetch", address = "127.0.0.1:18783", http = (), service = "fetch-front"),
    (name = "rpc", address = "127.0.0.1:18782", http = (), service = "rpc-front"),
  ],
);
