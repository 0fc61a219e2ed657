/**
 * What "Nabla: Show Computational Graph" and "Nabla: Show Picture" compute without VS Code: the
 * run's arguments, where the graph goes, the pictures a source text writes, and the webview's
 * HTML and its Content-Security-Policy.
 */
import * as assert from "node:assert/strict";
import * as path from "node:path";
import { describe, it } from "node:test";
import {
  escapeHtml,
  graphArguments,
  graphOutputPath,
  makeNonce,
  pictureCalls,
  pictureCsp,
  pictureHtml,
  pictureKind,
  resolvePicture,
} from "../../src/pictures";

describe("graphArguments", () => {
  it("runs the file with --graph, as Run File runs it", () => {
    assert.deepEqual(graphArguments("/w/a b.nb", "/s/graphs/a.svg"), ["run", "--graph", "/s/graphs/a.svg", "/w/a b.nb"]);
  });
});

describe("graphOutputPath", () => {
  it("puts the SVG under the storage folder, named after the file", () => {
    const out = graphOutputPath("/storage", "/work/examples/figure1.nb");
    assert.equal(path.dirname(out), path.join("/storage", "graphs"));
    assert.match(path.basename(out), /^figure1-[0-9a-f]{10}\.graph\.svg$/);
  });

  it("keeps files of the same name in different folders apart, and is stable", () => {
    const a = graphOutputPath("/s", "/one/main.nb");
    assert.notEqual(a, graphOutputPath("/s", "/two/main.nb"));
    assert.equal(a, graphOutputPath("/s", "/one/main.nb"));
  });
});

describe("pictureCalls", () => {
  const source = [
    '// plot("commented.svg", x);',
    "Tensor losses[3] = [3, 2, 1];",
    'plot("loss.svg", losses, "Training loss", "epoch", "loss");',
    'save_image ( "digits.png", reshape(x, [16, 8, 8]));',
    '/* scatter("block.svg", x, y); */',
    'print("histogram(\\"in_a_string.svg\\", t, 10)");',
    'myplot("not_builtin.svg", x);',
    'histogram("out/h.SVG", t, 10, "title");',
    'scatter("points.svg",',
    "        x, y);",
    'plot("data.npy", x);',
    "plot(name, x);",
    'save_image("esc\\"aped.png", x);',
  ].join("\n");

  it("finds each picture built-in with a literal .svg or .png path, and nothing in comments or strings", () => {
    assert.deepEqual(
      pictureCalls(source).map((call) => [call.builtin, call.path]),
      [
        ["plot", "loss.svg"],
        ["save_image", "digits.png"],
        ["histogram", "out/h.SVG"],
        ["scatter", "points.svg"],
        ["save_image", 'esc"aped.png'],
      ],
    );
  });

  it("gives the offsets of the name and of the literal", () => {
    const text = 'x;\nplot("loss.svg", y);';
    const [call] = pictureCalls(text);
    assert.equal(text.slice(call.start, call.start + 4), "plot");
    assert.equal(text.slice(call.literalStart, call.literalEnd), '"loss.svg"');
  });

  it("survives unterminated comments, strings and calls", () => {
    assert.deepEqual(pictureCalls('plot("a.svg'), []);
    assert.deepEqual(pictureCalls("/* plot(\"a.svg\", x);"), []);
    assert.deepEqual(pictureCalls('"plot(\\"a.svg\\"'), []);
    assert.deepEqual(pictureCalls("plot("), []);
    assert.deepEqual(pictureCalls('plot(""'), []);
  });
});

describe("picture files", () => {
  it("are SVG or PNG by their extension, as nabla decides", () => {
    assert.equal(pictureKind("a/loss.svg"), "svg");
    assert.equal(pictureKind("IMG.PNG"), "png");
    assert.equal(pictureKind("a.npy"), undefined);
    assert.equal(pictureKind("svg"), undefined);
  });

  it("are relative to the source file's folder", () => {
    assert.equal(resolvePicture("/w/examples/digits.nb", "digits_loss.svg"), "/w/examples/digits_loss.svg");
    assert.equal(resolvePicture("/w/examples/digits.nb", "../docs/x.png"), "/w/docs/x.png");
    assert.equal(resolvePicture("/w/examples/digits.nb", "/tmp/y.svg"), "/tmp/y.svg");
  });
});

describe("pictureHtml", () => {
  const page = {
    title: "Graph: <b>.nb",
    kind: "svg" as const,
    caption: 'the "graph"',
    imageUri: "https://file+.vscode-resource.vscode-cdn.net/s/graphs/a.svg?v=1&x=2",
    cspSource: "https://*.vscode-cdn.net",
    nonce: "abc123",
  };
  const html = pictureHtml(page);

  it("allows only images from the webview's resources and the nonce's style", () => {
    assert.equal(pictureCsp(page.cspSource, page.nonce), "default-src 'none'; img-src https://*.vscode-cdn.net; style-src 'nonce-abc123'");
    assert.ok(html.includes(`content="default-src &#39;none&#39;; img-src https://*.vscode-cdn.net; style-src &#39;nonce-abc123&#39;"`), html);
    assert.ok(html.includes('<style nonce="abc123">'));
    assert.doesNotMatch(html, /<script/i);
  });

  it("shows the image by its webview URI, with the title and caption escaped", () => {
    assert.ok(html.includes('<img class="svg" src="https://file+.vscode-resource.vscode-cdn.net/s/graphs/a.svg?v=1&amp;x=2" alt="Graph: &lt;b&gt;.nb">'), html);
    assert.ok(html.includes("<strong>Graph: &lt;b&gt;.nb</strong> · the &quot;graph&quot;"));
    assert.ok(pictureHtml({ ...page, kind: "png" }).includes('<img class="png"'));
  });

  it("escapes all five HTML specials", () => {
    assert.equal(escapeHtml(`<a href="x" title='y'>&</a>`), "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
  });

  it("makes a fresh alphanumeric nonce each time", () => {
    const a = makeNonce();
    assert.match(a, /^[A-Za-z0-9]{16,}$/);
    assert.notEqual(a, makeNonce());
  });
});
