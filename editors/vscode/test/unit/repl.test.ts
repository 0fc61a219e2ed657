/**
 * The text "Nabla: Send Selection to REPL" types: the selection or the current line, trimmed at
 * the end, and several lines as one bracketed paste.
 */
import * as assert from "node:assert/strict";
import { describe, it } from "node:test";
import { REPL_TERMINAL_NAME, replArguments, replInput } from "../../src/repl";

describe("replInput", () => {
  it("sends the selection when there is one, else the current line", () => {
    assert.equal(replInput("x @ w", "float y = 1;"), "x @ w");
    assert.equal(replInput("", "float y = 1;"), "float y = 1;");
    assert.equal(replInput("  \n ", "grad(w)"), "grad(w)");
  });

  it("sends nothing for a blank line", () => {
    assert.equal(replInput("", "   "), undefined);
    assert.equal(replInput("", ""), undefined);
  });

  it("sends several lines as one bracketed paste, without the trailing newline", () => {
    assert.equal(
      replInput("function float sq(float x) {\r\n    return x * x;\r\n}\r\n", ""),
      "\u001b[200~function float sq(float x) {\n    return x * x;\n}\u001b[201~",
    );
  });

  it("keeps the indentation of a single line", () => {
    assert.equal(replInput("", "    w -= 0.1 * grad(w);  "), "    w -= 0.1 * grad(w);");
  });
});

describe("the REPL terminal", () => {
  it("runs `nabla repl` in a terminal named for it", () => {
    assert.deepEqual(replArguments(), ["repl"]);
    assert.equal(REPL_TERMINAL_NAME, "Nabla REPL");
  });
});
