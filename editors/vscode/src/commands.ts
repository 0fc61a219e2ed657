/**
 * The identifiers of the commands the extension contributes.
 *
 * `nabla.runTest` is also part of the contract with the language server: the server's
 * "Run test" code lens on a `test "name" { ... }` block carries this command with the arguments
 * `[uri: string, testName: string]`. The server must not list it in its
 * `executeCommandProvider`, or the language client would try to register it a second time.
 */
export const COMMANDS = {
  runFile: "nabla.runFile",
  runTests: "nabla.runTests",
  runTest: "nabla.runTest",
  restartServer: "nabla.restartServer",
  showServerLog: "nabla.showServerLog",
  startRepl: "nabla.startRepl",
  sendToRepl: "nabla.sendSelectionToRepl",
  showGraph: "nabla.showGraph",
  showPicture: "nabla.showPicture",
} as const;
