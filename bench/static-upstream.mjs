// The pass-through's upstream in the gateway benchmark: answers every request with the bytes of
// the file given (as application/json), keep-alive, and prints its URL once it listens.
//   node bench/static-upstream.mjs <body-file>
import { readFileSync } from 'node:fs'
import http from 'node:http'

const body = readFileSync(process.argv[2])
const server = http.createServer((request, response) => {
  request.resume()
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
    response.end(body)
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}`)
})
