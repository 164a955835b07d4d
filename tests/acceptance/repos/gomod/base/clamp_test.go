package clamp

import "testing"

func TestInRangeAndBelow(t *testing.T) {
	if got := Clamp(5, 0, 10); got != 5 {
		t.Errorf("Clamp(5, 0, 10) = %d, want 5", got)
	}
	if got := Clamp(-3, 0, 10); got != 0 {
		t.Errorf("Clamp(-3, 0, 10) = %d, want 0", got)
	}
}
