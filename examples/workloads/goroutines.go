// Workload of goroutines.js (built by examples/workloads/goroutines.js):
// every 200 ms it starts 5 goroutines that each sleep 10 ms, compute, send
// their result on a channel and exit, until its stdin closes.
package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

const perRound = 5

func worker(n int, results chan<- int) {
	time.Sleep(10 * time.Millisecond)
	sum := 0
	for i := 0; i < 100000*n; i++ {
		sum += i
	}
	results <- sum
}

func main() {
	go func() {
		io.Copy(io.Discard, os.Stdin) // the parent went away
		os.Exit(0)
	}()
	fmt.Println("ready")
	results := make(chan int)
	for range time.Tick(200 * time.Millisecond) {
		for n := 1; n <= perRound; n++ {
			go worker(n, results)
		}
		for n := 1; n <= perRound; n++ {
			<-results
		}
	}
}
