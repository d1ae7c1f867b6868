// Command kubelet-portforward serves the kubelet's /portForward endpoint for the e2e rig's process kubelet and the
// integration tests: kube-apiserver's pods/portforward proxies the upgraded connection to
// https://<node InternalIP>:<kubeletEndpoint port>/portForward/<namespace>/<pod>, and Quorum reaches etcd that
// way because clouds block port 2379. The stream handling (WebSocket v4.channel.k8s.io and SPDY
// portforward.k8s.io) is the kubelet's own code, k8s.io/cri-streaming/pkg/streaming/portforward; only the
// last hop differs: static pods are hostNetwork processes, so a pod's port is dialled on --target-host.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/portforward"
)

// The kubelet's defaults (streamingConnectionIdleTimeout 4 h, remotecommand.DefaultStreamCreationTimeout 30 s), so a
// forwarded etcd connection lives as long as it would against a real node.
const (
	idleTimeout           = 4 * time.Hour
	streamCreationTimeout = 30 * time.Second
	dialTimeout           = 5 * time.Second
	halfCloseGrace        = 30 * time.Second
)

func main() {
	listen := flag.String("listen", "127.0.0.1:10250", "host:port to serve HTTPS on (port 0: a free port)")
	targetHost := flag.String("target-host", "127.0.0.1", "host a pod's port is dialled on (static pods are hostNetwork)")
	certFile := flag.String("tls-cert-file", "", "serving certificate (PEM); empty: a self-signed one made at start")
	keyFile := flag.String("tls-private-key-file", "", "serving key (PEM), with --tls-cert-file")
	clientCAFile := flag.String("client-ca-file", "", "if set, require a client certificate signed by this CA (PEM)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetPrefix("kubelet-portforward: ")

	tlsConfig, err := serverTLS(*certFile, *keyFile, *clientCAFile)
	if err != nil {
		log.Fatalf("TLS setup: %v", err)
	}
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("listen on %s: %v (is another kubelet serving this port?)", *listen, err)
	}
	server := &http.Server{
		Handler:           routes(&hostNetworkForwarder{targetHost: *targetHost}),
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(os.Stderr, "kubelet-portforward: http: ", log.LstdFlags),
	}
	// The one stdout line the test harness and the process kubelet wait for: the port is known only now.
	fmt.Printf("listening on %s\n", listener.Addr())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- server.ServeTLS(listener, "", "") }()
	select {
	case err := <-served:
		log.Fatalf("serve: %v", err)
	case sig := <-stop:
		log.Printf("%s: shutting down", sig)
		// Hijacked (upgraded) connections are not tracked by Shutdown; Close drops them, as a kubelet restart does.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := server.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			log.Printf("shutdown: %v", err)
		}
		_ = server.Close()
	}
}

func routes(forwarder portforward.PortForwarder) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	handle := func(w http.ResponseWriter, req *http.Request) {
		namespace, pod, uid := req.PathValue("namespace"), req.PathValue("pod"), req.PathValue("uid")
		// Ports arrive in the query for WebSocket requests and per stream (a header) for SPDY ones.
		options, err := portforward.NewV4Options(req)
		if err != nil {
			log.Printf("portForward %s/%s: bad request: %v", namespace, pod, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		log.Printf("portForward %s/%s: %s connection from %s", namespace, pod, protocolOf(req), req.RemoteAddr)
		portforward.ServePortForward(w, req, forwarder, namespace+"/"+pod, uid, options,
			idleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
		log.Printf("portForward %s/%s: connection from %s closed", namespace, pod, req.RemoteAddr)
	}
	// The kubelet serves GET and POST on both paths (POST is what SPDY clients send).
	for _, method := range []string{"GET", "POST"} {
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}", handle)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}/{uid}", handle)
	}
	return mux
}

func protocolOf(req *http.Request) string {
	if strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		return "websocket (" + req.Header.Get("Sec-WebSocket-Protocol") + ")"
	}
	return "SPDY"
}

// hostNetworkForwarder dials the pod's port on the node's own address: every static pod the process kubelet
// runs shares the Machine's network namespace, as hostNetwork pods do on a real node.
type hostNetworkForwarder struct{ targetHost string }

func (f *hostNetworkForwarder) PortForward(ctx context.Context, pod, _ string, port int32, stream io.ReadWriteCloser) error {
	address := net.JoinHostPort(f.targetHost, fmt.Sprint(port))
	dialer := net.Dialer{Timeout: dialTimeout}
	conn, err := dialer.DialContext(ctx, "tcp", address)
	if err != nil {
		log.Printf("portForward %s port %d: dial %s failed: %v", pod, port, address, err)
		return fmt.Errorf("dial %s: %w", address, err)
	}
	defer conn.Close()
	started := time.Now()
	fromPod := make(chan copied, 1)
	toPod := make(chan copied, 1)
	go func() { n, err := io.Copy(stream, conn); fromPod <- copied{n, err} }()
	go func() { n, err := io.Copy(conn, stream); toPod <- copied{n, err} }()
	select {
	case back := <-fromPod:
		// The pod closed (or reset) its side: returning closes the client's streams, as the kubelet's CRI runtime
		// does. The copy towards the pod ends when the caller closes the stream.
		log.Printf("portForward %s port %d: pod closed after %s, %d bytes back (%v)",
			pod, port, time.Since(started).Round(time.Millisecond), back.bytes, orEOF(back.err))
	case sent := <-toPod:
		// The client finished sending (an SPDY data stream's half-close): half-close towards the pod so it sees
		// EOF, and still deliver its answer.
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		// A pod that ignores the half-close must not pin this forward: give up after halfCloseGrace.
		var back copied
		select {
		case back = <-fromPod:
		case <-time.After(halfCloseGrace):
			back.err = fmt.Errorf("pod still open %s after the client finished; closed", halfCloseGrace)
		}
		log.Printf("portForward %s port %d: client closed after %s, %d bytes to the pod (%v), %d back (%v)",
			pod, port, time.Since(started).Round(time.Millisecond), sent.bytes, orEOF(sent.err), back.bytes, orEOF(back.err))
	}
	return nil
}

func orEOF(err error) string {
	if err == nil {
		return "EOF"
	}
	return err.Error()
}

type copied struct {
	bytes int64
	err   error
}

// serverTLS loads or makes the serving certificate; kube-apiserver does not verify it unless started with
// --kubelet-certificate-authority (kubeadm does not set it), so a self-signed one serves.
func serverTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	if certFile != "" || keyFile != "" {
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
	} else {
		cert, err = selfSignedCertificate()
	}
	if err != nil {
		return nil, err
	}
	config := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--client-ca-file %s holds no PEM certificate", clientCAFile)
		}
		config.ClientCAs = pool
		config.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return config, nil
}
