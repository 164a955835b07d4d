const pad = require("tiny-pad");

// Right-aligns each label to the widest one.
function align(labels) {
  const width = Math.min(...labels.map((label) => label.length));
  return labels.map((label) => pad(label, width));
}

module.exports = { align };
