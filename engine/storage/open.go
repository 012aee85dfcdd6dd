package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Open turns a storage location from configuration or the command line into
// a Store, so every command accepts the same forms:
//
//	s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1&create_bucket=true
//	file:///abs/dir
//	./relative/dir or /abs/dir
//
// S3 credentials come from the SDK's default chain (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, shared config, roles) and never from the URL, which
// tends to end up in logs and workflow history. With an endpoint, path-style
// addressing is on unless path_style=false.
func Open(ctx context.Context, rawURL string) (Store, error) {
	if rawURL == "" {
		return nil, errors.New("storage: empty storage location; pass a directory, file:///abs/dir or s3://bucket/prefix")
	}
	if isPlainPath(rawURL) {
		return NewLocal(rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// The parse error quotes the input; do not repeat it in case it holds a secret.
		return nil, fmt.Errorf("storage: cannot parse storage location: %w; use a directory, file:///abs/dir or s3://bucket/prefix", err)
	}
	// A fragment is never sent anywhere: url.Parse would cut it off
	// silently, and with it whatever followed (a whole query).
	if u.Fragment != "" || strings.Contains(rawURL, "#") {
		return nil, fmt.Errorf("storage: the storage location has a '#' fragment (%q), which is not part of any location and would be dropped; remove it, or percent-encode it (%%23) if it is part of a name", "#"+u.Fragment)
	}
	switch u.Scheme {
	case "s3":
		return openS3(ctx, u)
	case "file":
		return openFile(u)
	default:
		return nil, fmt.Errorf("storage: unknown storage scheme %q; use a directory, file:///abs/dir or s3://bucket/prefix", u.Scheme)
	}
}

// isPlainPath reports whether s is a filesystem path rather than a URL:
// no scheme at all, or a Windows drive letter such as C:\dir.
func isPlainPath(s string) bool {
	i := strings.Index(s, ":")
	if i < 0 || strings.ContainsAny(s[:i], "/\\") {
		return true
	}
	return runtime.GOOS == "windows" && i == 1 && filepath.IsAbs(s)
}

func openFile(u *url.URL) (Store, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("storage: file URL %q names host %q; only local directories are supported, use file:///abs/dir", u.String(), u.Host)
	}
	if u.Opaque != "" || u.Path == "" {
		return nil, fmt.Errorf("storage: file URL %q has no absolute path; use file:///abs/dir or a plain directory path", u.String())
	}
	if u.RawQuery != "" {
		return nil, fmt.Errorf("storage: file URL %q has query parameters, which local directories do not take; remove them", u.String())
	}
	return NewLocal(filepath.FromSlash(u.Path))
}

func openS3(ctx context.Context, u *url.URL) (Store, error) {
	if u.User != nil {
		return nil, errors.New("storage: credentials in an s3:// URL are refused because URLs get logged; remove them and set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
	}
	if u.Host == "" {
		return nil, fmt.Errorf("storage: s3 URL %q has no bucket; use s3://bucket/prefix", u.String())
	}
	if u.Port() != "" || strings.Contains(u.Host, ":") {
		return nil, fmt.Errorf("storage: s3 URL %q has a port after the bucket name; the server's address goes in endpoint=, e.g. s3://bucket/prefix?endpoint=http://127.0.0.1:9000", u.String())
	}
	cfg := S3Config{Bucket: u.Host, Prefix: strings.TrimPrefix(u.Path, "/")}
	q := u.Query()
	pathStyle := ""
	for name, vals := range q {
		if len(vals) != 1 {
			return nil, fmt.Errorf("storage: s3 URL parameter %q is given %d times; give it once", name, len(vals))
		}
		v := vals[0]
		switch name {
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
				return nil, fmt.Errorf("storage: s3 URL endpoint %q is not an http(s) URL; use e.g. endpoint=http://127.0.0.1:9000", v)
			}
			if e.User != nil {
				return nil, errors.New("storage: credentials in the endpoint URL are refused; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
			}
			if (e.Path != "" && e.Path != "/") || e.RawQuery != "" || e.ForceQuery {
				return nil, fmt.Errorf("storage: s3 URL endpoint %q has a path or query, which would be dropped; give only scheme, host and port, e.g. endpoint=http://127.0.0.1:9000", v)
			}
			cfg.Endpoint = v
		case "region":
			cfg.Region = v
		case "create_bucket":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("storage: s3 URL parameter create_bucket=%q is not a boolean; use true or false", v)
			}
			cfg.CreateBucket = b
		case "path_style":
			pathStyle = v
		default:
			return nil, fmt.Errorf("storage: unknown s3 URL parameter %q; known: endpoint, region, create_bucket, path_style", name)
		}
	}
	cfg.PathStyle = cfg.Endpoint != ""
	if pathStyle != "" {
		b, err := strconv.ParseBool(pathStyle)
		if err != nil {
			return nil, fmt.Errorf("storage: s3 URL parameter path_style=%q is not a boolean; use true or false", pathStyle)
		}
		cfg.PathStyle = b
	}
	s, err := NewS3(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}
