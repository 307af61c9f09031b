// The ceiling for one Node process here: checks the same Authorization header and answers the same
// status and body as the service (with Content-Type alone of its headers), with no other work. Started by bench.ts; prints its port. An answer is found by
// method and URL, and by whether an Idempotency-Key came (an idempotent create is answered apart).
import { createServer } from 'node:http'

const { authorization, answers } = JSON.parse(process.env.BARE_ANSWERS)
const UNAUTHORIZED = '{"code":"unauthorized","message":"The API key is invalid or revoked","status":401}'

const server = createServer((request, response) => {
  const idempotent = request.headers['idempotency-key'] === undefined ? '' : ' idempotent'
  const answer = answers[`${request.method} ${request.url}${idempotent}`]
  request.resume() // read and drop any body, as a parser would have to
  request.on('end', () => {
    if (request.headers.authorization !== authorization) {
      response.writeHead(401, { 'content-type': 'application/json; charset=utf-8' }).end(UNAUTHORIZED)
    } else if (answer === undefined) {
      response.writeHead(404).end()
    } else {
      response.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8' }).end(answer.body)
    }
  })
})
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`))
process.on('SIGTERM', () => server.close(() => process.exit(0)))
