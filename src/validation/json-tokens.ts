import { Tokenizer, TokenParser, TokenType } from '@streamparser/json'

export { TokenType }

/** A place in a text: line and column, both from 1; columns count characters, not bytes. */
export interface TextPosition {
  line: number
  column: number
}

/**
 * Finds the line and column of byte offsets in a UTF-8 text. Offsets asked in increasing order cost
 * only the bytes between them: a whole array on one line of megabytes has an element every few bytes.
 */
export class TextPositions {
  private readonly lineStarts = [0]
  private last = { offset: 0, line: 1, column: 1 }

  constructor (private readonly bytes: Buffer) {
    for (let i = bytes.indexOf(0x0a); i !== -1; i = bytes.indexOf(0x0a, i + 1)) this.lineStarts.push(i + 1)
  }

  at (offset: number): TextPosition {
    const line = this.lineOf(offset)
    const from = line === this.last.line && offset >= this.last.offset ? this.last : { offset: this.lineStarts[line - 1]!, line, column: 1 }
    this.last = { offset, line, column: from.column + this.bytes.toString('utf8', from.offset, offset).length }
    return { line, column: this.last.column }
  }

  private lineOf (offset: number): number {
    let low = 0
    let high = this.lineStarts.length - 1
    while (low < high) {
      const middle = (low + high + 1) >> 1
      if (this.lineStarts[middle]! <= offset) low = middle
      else high = middle - 1
    }
    return low + 1
  }
}

/** JSON text that is not valid, with where and why, in words a person can act on. */
export class JsonSyntaxError extends Error {
  override name = 'JsonSyntaxError'

  constructor (readonly problem: string, readonly position: TextPosition) {
    super(`${problem} at line ${position.line}, column ${position.column}`)
  }
}

// What the parser was waiting for, by its state's name, when a token came that does not fit.
const EXPECTED: Record<string, string> = {
  VALUE: 'a value',
  KEY: 'a field name in double quotes',
  COLON: 'a ":"',
  COMMA: 'a "," or a closing bracket',
  ENDED: 'the end of the text'
}

/**
 * Reads JSON text with a streaming parser, handing each token and its byte offset to `onToken`; throws
 * JsonSyntaxError at the first fault, naming its line and column (JSON.parse names at most an offset).
 */
export function readJsonTokens (bytes: Buffer, onToken: (token: TokenType, offset: number) => void): void {
  const tokenizer = new Tokenizer()
  // Only checks the grammar: values are dropped as they end, so memory stays flat.
  const parser = new TokenParser({ paths: ['$.*'], keepStack: false })
  parser.onValue = () => {}
  let offset = 0
  tokenizer.onToken = (info) => {
    offset = info.offset
    onToken(info.token, info.offset)
    parser.write(info)
  }
  try {
    tokenizer.write(bytes)
    tokenizer.end()
  } catch (error) {
    if (!(error instanceof Error) || !/^(Unexpected|Tokenizer ended)/.test(error.message)) throw error
    // The tokenizer names the byte it stopped at; the parser stops at the token it was given.
    const at = Number(/absolute position "(\d+)"/.exec(error.message)?.[1] ?? offset)
    if (at >= bytes.length || error.message.startsWith('Tokenizer ended')) throw incomplete(bytes)
    const expected = EXPECTED[/in state (\w+)/.exec(error.message)?.[1] ?? '']
    const found = String.fromCodePoint(bytes.toString('utf8', at, at + 4).codePointAt(0)!)
    throw new JsonSyntaxError(`unexpected ${JSON.stringify(found)}${expected === undefined ? '' : ` where ${expected} was expected`}`, new TextPositions(bytes).at(at))
  }
  if (!parser.isEnded) throw incomplete(bytes)
}

// Positions are found only for a fault: valid text is not read a second time for its line starts.
function incomplete (bytes: Buffer): JsonSyntaxError {
  return new JsonSyntaxError('the text ends before the JSON value is complete', new TextPositions(bytes).at(bytes.length))
}
