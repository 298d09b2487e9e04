package unwrap

import "testing"

func TestDescription(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"mode is monitor (report violations, block nothing) or protect (the data plane\nblocks traffic that the policy does not allow). Changing it updates the native\nobject in place.",
			"mode is monitor (report violations, block nothing) or protect (the data plane blocks traffic that the policy does not allow). Changing it updates the native object in place."},
		{"first paragraph\nwrapped.\n\nsecond one.", "first paragraph wrapped.\n\nsecond one."},
		{"a list:\n- one\n- two\nwrapped", "a list:\n- one\n- two wrapped"},
		{"code:\n  indented stays", "code:\n  indented stays"},
		{"one line", "one line"},
	} {
		got := Description(tc.in)
		if got != tc.want {
			t.Errorf("Description(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if l, wrapped := Wrapped(got); wrapped {
			t.Errorf("Wrapped(%q) found %q", got, l)
		}
	}
	if _, wrapped := Wrapped("a\nb"); !wrapped {
		t.Error("Wrapped missed a line break inside a paragraph")
	}
}
