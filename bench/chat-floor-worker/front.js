// The architecture's floor: a front worker that does nothing but hand the request to a second
// worker through a service binding (the gateway → family hop, with no auth, checks or metering),
// which forwards it upstream (index.js). Served by two-isolates.capnp on plain workerd.
export default {
  fetch(request, env) {
    return env.BACK.fetch(request)
  },
}
