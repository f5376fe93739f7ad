package natsexec

import "testing"

func TestRedactHidesEverySecretOfAServerList(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://drover:s3cret@h1:4222", "nats://drover:xxxxx@h1:4222"},
		{"nats://t0ken@h1:4222", "nats://xxxxx@h1:4222"},
		{"nats://a:s3cret@h1:4222,nats://b:s3cret@h2:4222", "nats://a:xxxxx@h1:4222,nats://b:xxxxx@h2:4222"},
		{"nats://h1:4222, nats://t0ken@h2:4222", "nats://h1:4222,nats://xxxxx@h2:4222"},
		{"tls://a:s3cret@h1:4222,nats://t0ken@h2:4222,nats://h3", "tls://a:xxxxx@h1:4222,nats://xxxxx@h2:4222,nats://h3"},
		{"nats://a:s%zz@h1", "xxxxx@h1"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := redact(tc.in); got != tc.want {
				t.Fatalf("redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
