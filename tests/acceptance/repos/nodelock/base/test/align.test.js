const test = require("node:test");
const assert = require("node:assert");
const { align } = require("../index.js");

test("labels of one width stay as they are", () => {
  assert.deepStrictEqual(align(["ab", "cd"]), ["ab", "cd"]);
});
