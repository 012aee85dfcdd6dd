package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// DefaultRegion is used when neither the URL nor S3Config names a region.
// S3-compatible servers such as MinIO accept it, and AWS treats it as the
// classic region.
const DefaultRegion = "us-east-1"

// S3Config says where an S3 store lives and how to reach it. Only Bucket is
// required; the zero values give AWS S3 with the default credential chain.
type S3Config struct {
	// Bucket holds every key.
	Bucket string
	// Prefix is prepended to every key ("sessions/" or "sessions"; "" for
	// the whole bucket), so one bucket can host several deployments.
	Prefix string
	// Endpoint is the base URL of an S3-compatible server
	// (http://127.0.0.1:9000 for a local MinIO); empty means AWS.
	Endpoint string
	// Region defaults to DefaultRegion.
	Region string
	// PathStyle addresses the bucket as endpoint/bucket rather than
	// bucket.endpoint, which MinIO and most self-hosted servers need.
	PathStyle bool
	// AccessKey and SecretKey are static credentials for tests and tools
	// that already hold them. When empty the SDK's default chain is used
	// (environment, shared config, instance roles), which is what
	// deployments should rely on.
	AccessKey, SecretKey string
	// CreateBucket makes NewS3 create the bucket if it is missing; meant
	// for development and tests, not for production buckets.
	CreateBucket bool
}

// S3 is a Store over an S3 bucket and key prefix.
type S3 struct {
	client *s3.Client
	bucket string
	prefix string // "" or ends with "/"
	region string
}

var _ Store = (*S3)(nil)

// NewS3 builds an S3 store from cfg. It does not contact the server unless
// cfg.CreateBucket is set, so a wrong endpoint shows up on first use.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("storage: S3 bucket is empty; name a bucket, e.g. s3://my-bucket/prefix")
	}
	prefix, err := dirPrefix(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("storage: S3 key prefix: %w", err)
	}
	if (cfg.AccessKey == "") != (cfg.SecretKey == "") {
		return nil, errors.New("storage: S3 static credentials need both an access key and a secret key; set both or neither")
	}
	region := cfg.Region
	if region == "" {
		region = DefaultRegion
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(region)}
	if cfg.AccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("storage: load AWS configuration: %w; check AWS_* environment variables and ~/.aws/config", err)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	s := &S3{client: client, bucket: cfg.Bucket, prefix: prefix, region: region}
	if cfg.CreateBucket {
		if err := s.CreateBucket(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Location returns s3://bucket or s3://bucket/prefix, without a trailing
// slash, so Sub can append "/" + its own prefix.
func (s *S3) Location() string {
	if s.prefix == "" {
		return "s3://" + s.bucket
	}
	return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/")
}

// CreateBucket creates the bucket, succeeding if we already own it, so dev
// and test setups can call it on every start.
func (s *S3) CreateBucket(ctx context.Context) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(s.bucket)}
	if s.region != DefaultRegion {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(s.region),
		}
	}
	_, err := s.client.CreateBucket(ctx, in)
	var owned *types.BucketAlreadyOwnedByYou
	if err == nil || errors.As(err, &owned) {
		return nil
	}
	var exists *types.BucketAlreadyExists
	if errors.As(err, &exists) {
		return fmt.Errorf("storage: create bucket %q: the name belongs to another account; choose another bucket name: %w", s.bucket, err)
	}
	return fmt.Errorf("storage: create bucket %q: %w; check the endpoint and credentials", s.bucket, err)
}

// Put uploads data in one request; S3 makes a single PUT atomic.
func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	if err := s.putObject(ctx, key, data, nil); err != nil {
		return s.wrap("put", key, err)
	}
	return nil
}

// putObject uploads data in one request, under the condition ifNoneMatch
// when it is set.
func (s *S3) putObject(ctx context.Context, key string, data []byte, ifNoneMatch *string) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(s.prefix + key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		IfNoneMatch:   ifNoneMatch,
	})
	return err
}

// Create uploads data only if the key does not exist yet: a conditional
// PUT with If-None-Match: *, which AWS S3 and MinIO evaluate atomically.
// 412 Precondition Failed means another writer was first (ErrExists); a
// 409 ConditionalRequestConflict (a racing conditional write still in
// flight) is returned as a plain error, to be retried.
func (s *S3) Create(ctx context.Context, key string, data []byte) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	err := s.putObject(ctx, key, data, aws.String("*"))
	var resp *smithyhttp.ResponseError
	if errors.As(err, &resp) && resp.HTTPStatusCode() == http.StatusPreconditionFailed {
		return fmt.Errorf("storage: create %q in %s: %w", key, s.Location(), ErrExists)
	}
	if err != nil {
		return s.wrap("create", key, err)
	}
	return nil
}

// Get downloads key, mapping NoSuchKey and 404 to ErrNotFound.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
	})
	if err != nil {
		var nsk *types.NoSuchKey
		var resp *smithyhttp.ResponseError
		if errors.As(err, &nsk) || (errors.As(err, &resp) && resp.HTTPStatusCode() == http.StatusNotFound && !isNoSuchBucket(err)) {
			return nil, fmt.Errorf("storage: get %q from %s: %w", key, s.Location(), ErrNotFound)
		}
		return nil, s.wrap("get", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("storage: get %q from %s: read body: %w", key, s.Location(), err)
	}
	return data, nil
}

// List pages through ListObjectsV2 and returns keys relative to the store
// prefix. Directory markers (keys ending in "/") are skipped.
func (s *S3) List(ctx context.Context, prefix string) ([]string, error) {
	if err := validPrefix(prefix); err != nil {
		return nil, err
	}
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
	})
	keys := []string{}
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.wrap("list", prefix, err)
		}
		for _, obj := range page.Contents {
			k := strings.TrimPrefix(aws.ToString(obj.Key), s.prefix)
			if k == "" || strings.HasSuffix(k, "/") {
				continue
			}
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// Delete removes key; S3 already treats a missing key as success.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
	})
	if err != nil {
		return s.wrap("delete", key, err)
	}
	return nil
}

func isNoSuchBucket(err error) bool {
	var nsb *types.NoSuchBucket
	if errors.As(err, &nsb) {
		return true
	}
	// GetObject does not model NoSuchBucket; the code is in the message.
	return strings.Contains(err.Error(), "NoSuchBucket")
}

// wrap adds the operation, key and a hint for the failures people hit most.
func (s *S3) wrap(op, key string, err error) error {
	hint := "check the endpoint, region and credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)"
	if isNoSuchBucket(err) {
		hint = "the bucket does not exist; create it or add create_bucket=true to the storage URL"
	}
	return fmt.Errorf("storage: %s %q in %s: %w; %s", op, key, s.Location(), err, hint)
}
