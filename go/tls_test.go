package esbulk_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
)

// writePEM writes blocks of type typ to a new file in dir.
func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// clientCert makes a CA and a client certificate it signed: (CA, cert file,
// key file).
func clientCert(t *testing.T, dir string) (*x509.Certificate, string, string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "esbulk test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "esbulk client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return ca, writePEM(t, dir, "client.pem", "CERTIFICATE", der), writePEM(t, dir, "client.key", "EC PRIVATE KEY", kder)
}

// A real TLS connection: an https proxy in front of the test cluster that
// requires a client certificate. Without the CA file the server is not
// trusted (every item fails); with CACertFile, CertFile and KeyFile every
// item is indexed; without the client certificate the handshake fails.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	target, _ := url.Parse(clusterURL())
	srv := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
	ca, certFile, keyFile := clientCert(t, dir)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	defer srv.Close()
	caFile := writePEM(t, dir, "server-ca.pem", "CERTIFICATE", srv.Certificate().Raw)
	index := uniqueIndex("go-esbulk-tls")
	freshIndex(t, index, "")
	defer call(t, "DELETE", "/"+index, "")

	run := func(name string, cfg esbulk.BulkIndexerConfig, n int) (*tally, string) {
		// the proxy is the only address: the nodes' own are plain http
		cfg.Addresses = []string{srv.URL}
		cfg.Index = index
		cfg.Config = map[string]string{"topology.discovery": "false", "retry.max": "0",
			"delivery.timeout.ms": "10000"}
		bi, err := esbulk.NewBulkIndexer(cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ty := newTally(n)
		for k := 0; k < n; k++ {
			k := k
			err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: name + strconv.Itoa(k),
				Body: strings.NewReader(`{"n":1}`),
				OnSuccess: func(context.Context, esbulk.BulkIndexerItem, esbulk.BulkIndexerResponseItem) {
					ty.onSuccess(k)
				},
				OnFailure: func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
					ty.onFailure(k, r, err)
				}})
			if err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := bi.Close(ctx); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
		ty.exactlyOnce(t, nil)
		why := ""
		for _, f := range ty.failures {
			if f.err != nil {
				why = f.err.Error()
			}
			break
		}
		return ty, why
	}

	if ty, why := run("untrusted", esbulk.BulkIndexerConfig{CertFile: certFile, KeyFile: keyFile}, 5); ty.ok.Load() != 0 {
		t.Errorf("untrusted server: %d indexed, want none", ty.ok.Load())
	} else {
		t.Logf("untrusted server: %s", why)
	}
	if ty, why := run("nocert", esbulk.BulkIndexerConfig{CACertFile: caFile}, 5); ty.ok.Load() != 0 {
		t.Errorf("no client certificate: %d indexed, want none", ty.ok.Load())
	} else {
		t.Logf("no client certificate: %s", why)
	}
	if ty, _ := run("trusted", esbulk.BulkIndexerConfig{CACertFile: caFile, CertFile: certFile,
		KeyFile: keyFile}, 200); ty.ok.Load() != 200 {
		t.Errorf("CA file and client certificate: %d of 200 indexed: %v", ty.ok.Load(), ty.failures)
	}
	if ty, _ := run("insecure", esbulk.BulkIndexerConfig{InsecureSkipVerify: true, CertFile: certFile,
		KeyFile: keyFile}, 50); ty.ok.Load() != 50 {
		t.Errorf("InsecureSkipVerify: %d of 50 indexed: %v", ty.ok.Load(), ty.failures)
	}
	call(t, "POST", "/"+index+"/_refresh", "")
	if st, b := call(t, "GET", "/"+index+"/_count", ""); st != 200 || !strings.Contains(string(b), `"count":250`) {
		t.Errorf("count: %d %s, want 250", st, b)
	}
}
