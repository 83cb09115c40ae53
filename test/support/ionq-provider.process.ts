/**
 * The fake IonQ v0.3 API with its control endpoint (test/e2e/fakes/ionq.fake.ts) in its own Node
 * process, for the Durable Object tests of the reasoning worker: prints one JSON line (what the
 * tests get), stops when its stdin closes.
 */
import service from '../e2e/fakes/ionq.fake.ts'

const started = await service.start()
process.stdout.write(`${JSON.stringify({ ...started.provide, env: started.env })}\n`)
process.stdin.resume()
process.stdin.on('end', async () => {
  await started.stop()
  process.exit(0)
})
