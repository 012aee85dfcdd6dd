package session

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/storage"
)

// Keys of a Temporal session's owner and stored config.
const (
	OwnerKey = "owner.json"
	// ConfigKey holds the config (defaults applied, no secrets), so steps
	// load it instead of carrying it.
	ConfigKey = "config.json"
)

// Claim creates owner.json only if the session has no owner yet: of two
// workflows claiming one session exactly one succeeds. The error of the
// other wraps storage.ErrExists.
func Claim(ctx context.Context, st storage.Store, owner OwnerFile) error {
	data, err := json.MarshalIndent(owner, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", OwnerKey, err)
	}
	if err := st.Create(ctx, OwnerKey, append(data, '\n')); err != nil {
		return fmt.Errorf("create %s: %w", OwnerKey, err)
	}
	return nil
}

// ReadOwner reads owner.json; a missing one wraps storage.ErrNotFound.
func ReadOwner(ctx context.Context, st storage.Store) (*OwnerFile, error) {
	var o OwnerFile
	if err := ReadJSON(ctx, st, OwnerKey, &o); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("read %s in %s: %w", OwnerKey, st.Location(), err)
	}
	return &o, nil
}

// InputsHash identifies a session's inputs as stored: the task, the bytes
// of config.json and of eval_criteria.json (nil when there is none). Each
// part is length-prefixed, so no two different inputs share an encoding.
func InputsHash(task string, config, criteria []byte) string {
	h := sha256.New()
	for _, b := range [][]byte{[]byte(task), config, criteria} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Inputs are what every step of a Temporal session runs on, stored once
// by InitSession: the task in session.json, the config in config.json, the
// criteria in eval_criteria.json.
type Inputs struct {
	Task     string
	Config   config.Config
	Criteria []string
	Hash     string
}

// EncodedInputs are a session's inputs as they will be stored.
type EncodedInputs struct {
	config, criteria []byte
	Hash             string
}

// EncodeInputs encodes the inputs and computes their InputsHash, which
// session.json records before the files are written.
func EncodeInputs(task string, cfg *config.Config, criteria []string) (*EncodedInputs, error) {
	e := &EncodedInputs{}
	var err error
	if e.config, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		return nil, fmt.Errorf("encode %s: %w", ConfigKey, err)
	}
	e.config = append(e.config, '\n')
	if len(criteria) > 0 {
		if e.criteria, err = json.MarshalIndent(criteria, "", "  "); err != nil {
			return nil, fmt.Errorf("encode %s: %w", EvalCriteriaKey, err)
		}
		e.criteria = append(e.criteria, '\n')
	}
	e.Hash = InputsHash(task, e.config, e.criteria)
	return e, nil
}

// Write stores config.json and eval_criteria.json (the task is in
// session.json). Rewriting them is harmless: they are the same bytes.
func (e *EncodedInputs) Write(ctx context.Context, st storage.Store) error {
	if err := st.Put(ctx, ConfigKey, e.config); err != nil {
		return fmt.Errorf("write %s: %w", ConfigKey, err)
	}
	if e.criteria != nil {
		if err := st.Put(ctx, EvalCriteriaKey, e.criteria); err != nil {
			return fmt.Errorf("write %s: %w", EvalCriteriaKey, err)
		}
	}
	return nil
}

// ErrInputsChanged is wrapped by LoadInputs when the stored inputs are not
// the ones the session was started with.
var ErrInputsChanged = errors.New("the session's stored task, config or criteria are not the ones it was started with")

// LoadInputs reads the inputs of a session and checks them against want
// (the hash the workflow holds) and recorded (owner.json's).
func LoadInputs(ctx context.Context, st storage.Store, recorded, want string) (*Inputs, error) {
	var info Info
	if err := ReadJSON(ctx, st, InfoKey, &info); err != nil {
		return nil, fmt.Errorf("read %s: %w", InfoKey, err)
	}
	cfgData, err := st.Get(ctx, ConfigKey)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ConfigKey, err)
	}
	critData, err := st.Get(ctx, EvalCriteriaKey)
	if errors.Is(err, storage.ErrNotFound) {
		critData, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", EvalCriteriaKey, err)
	}
	got := InputsHash(info.Task, cfgData, critData)
	if got != want || got != recorded {
		return nil, fmt.Errorf("%w: they hash to %s, the workflow expects %s and %s records %s; start a new session",
			ErrInputsChanged, got, want, OwnerKey, recorded)
	}
	in := &Inputs{Task: info.Task, Criteria: []string{}, Hash: got}
	if err := json.Unmarshal(cfgData, &in.Config); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInputsChanged, ConfigKey, err)
	}
	if critData != nil {
		if in.Criteria, err = config.ParseCriteria(critData, EvalCriteriaKey); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInputsChanged, err)
		}
	}
	return in, nil
}
