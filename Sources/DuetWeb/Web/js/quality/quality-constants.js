// The browser client's copy of `QualityConstants` (Sources/DuetClient/Quality/QualityConstants.swift). Tests on
// both sides parse the lines below and compare them with the Swift table: keep exactly one `NAME: value,` per
// line, plain decimal literals. docs/call-quality.md says where each number comes from.
export const QUALITY = Object.freeze({
  // A MOS at or above this is `good` (R ≈ 79: "users satisfied" in ITU-T G.107's categories).
  QUALITY_GOOD_MOS_MIN: 4,
  // A MOS at or above this (and below good) is `fair` (R = 60: "many users dissatisfied" starts below it).
  QUALITY_FAIR_MOS_MIN: 3.1,
  // How often a reading is taken while in a call.
  QUALITY_SAMPLE_INTERVAL_MS: 1000,
});
