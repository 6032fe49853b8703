package domain

// IntakeStage names a stage of an inbound post's intake
// (docs/design.md#the-inbound-pipeline). A receipt records the stage its
// post reached: the stage that refused it, or StageStart for a post handed
// to its workflow; replay reads it to tell whether the post got past the
// signature step.
type IntakeStage string

// The intake's stages. Their order is the order of the pipeline that runs
// them (integrations), which is the one place that decides it.
const (
	StageToken       IntakeStage = "token"
	StageRate        IntakeStage = "rate"
	StagePaused      IntakeStage = "paused"
	StageSize        IntakeStage = "size"
	StageSignature   IntakeStage = "signature"
	StageSenderRetry IntakeStage = "sender_retry"
	StageMapping     IntakeStage = "mapping"
	StageShape       IntakeStage = "shape"
	StageStore       IntakeStage = "store"
	StageStart       IntakeStage = "start"
)

// IdempotencyKeyHeader names a request or post so that its sender's
// retries of it are recognised (the REST API's POSTs and the inbound
// endpoints alike).
const IdempotencyKeyHeader = "Idempotency-Key"

// BadIdempotencyKey is the answer to a malformed Idempotency-Key.
const BadIdempotencyKey = IdempotencyKeyHeader + " must be one value of 1 to 255 printable ASCII characters"

// ParseIdempotencyKey reads the Idempotency-Key header's values: "" and ok
// when there is none; ok is false when there are several, or the one is not
// 1 to 255 printable ASCII characters.
func ParseIdempotencyKey(values []string) (key string, ok bool) {
	switch {
	case len(values) == 0:
		return "", true
	case len(values) > 1 || !validIdempotencyKey(values[0]):
		return "", false
	}
	return values[0], true
}

func validIdempotencyKey(k string) bool {
	if len(k) < 1 || len(k) > 255 {
		return false
	}
	for i := range len(k) {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}
