# The two-isolate floor (front.js → service binding → index.js → upstream) on bare workerd.
# Run: ../../node_modules/@cloudflare/workerd-linux-64/bin/workerd serve two-isolates.capnp
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "front", worker = .frontWorker),
    (name = "back", worker = .backWorker),
    (name = "net", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:18786", http = (), service = "front") ],
);

const frontWorker :Workerd.Worker = (
  modules = [ (name = "front.js", esModule = embed "front.js") ],
  compatibilityDate = "2025-01-01",
  bindings = [ (name = "BACK", service = "back") ],
);

const backWorker :Workerd.Worker = (
  modules = [ (name = "index.js", esModule = embed "index.js") ],
  compatibilityDate = "2025-01-01",
  bindings = [ (name = "UPSTREAM", text = "http://127.0.0.1:18080") ],
  globalOutbound = "net",
);
