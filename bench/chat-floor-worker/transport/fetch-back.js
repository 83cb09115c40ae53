export default {
  async fetch(request, env) {
    const context = JSON.parse(request.headers.get('x-svc-context'))
    const url = new URL(request.url)
    const body = await request.text()
    const resp = await fetch(env.UPSTREAM + url.pathname + url.search, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-mock',
        'x-client-request-id': context.requestId,
      },
      body,
    })
    const text = await resp.text()
    return new Response(text, {
      status: resp.status,
      headers: { 'content-type': 'application/json', 'x-request-id': context.requestId },
    })
  },
}
