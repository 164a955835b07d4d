const test = require("node:test");
const assert = require("node:assert");
const { align } = require("../index.js");

test("aligns to the widest label", () => {
  assert.deepStrictEqual(align(["a", "bbb"]), ["  a", "bbb"]);
});
