package apiwrite

import (
	"testing"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// env is the control plane the package's tests share.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	controlplanetest.Main(m, controlplanetest.Options{}, &env, nil)
}
