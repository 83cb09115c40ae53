import { WorkerEntrypoint } from 'cloudflare:workers'
export default class Back extends WorkerEntrypoint {
  async fetch() {
    return new Response('no', { status: 404 })
  }
  async handle(forwarded) {
    const resp = await fetch(this.env.UPSTREAM + forwarded.path, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-mock',
        'x-client-request-id': forwarded.context.requestId,
      },
      body: forwarded.body,
    })
    const text = await resp.text()
    return {
      status: resp.status,
      headers: { 'content-type': 'application/json', 'x-request-id': forwarded.context.requestId },
      body: text,
    }
  }
}
