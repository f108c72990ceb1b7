package timeline_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/pushpull/pushpull/timeline"
)

// A home timeline holds the messages of the people one follows, newest
// first, a page at a time; the cursor of a page (Next) asks for the page
// after it.
func Example() {
	ctx := context.Background()
	s := timeline.NewMemory()
	defer s.Close()

	s.Follow(ctx, 1, 2) // user 1 follows users 2 and 3
	s.Follow(ctx, 1, 3)
	for i, author := range []timeline.UserID{2, 3, 2, 4} { // user 4 is not followed
		s.Post(ctx, author, fmt.Sprintf("message %d", i+1))
	}

	for page, err := range timeline.Pages(ctx, s, 1, timeline.Query{Limit: 2}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, m := range page.Messages {
			fmt.Printf("%d by user %d: %s\n", m.ID, m.Author, m.Body)
		}
		if page.Next != "" {
			fmt.Println("-- next page")
		}
	}
	// Output:
	// 3 by user 2: message 3
	// 2 by user 3: message 2
	// -- next page
	// 1 by user 2: message 1
}

// Invalid input is rejected before anything is written, with an error that
// names the field and matches both ErrInvalidInput and a specific sentinel.
func Example_invalidInput() {
	s := timeline.NewMemory()
	defer s.Close()
	_, err := s.Post(context.Background(), 1, "")
	fmt.Println(errors.Is(err, timeline.ErrInvalidInput), errors.Is(err, timeline.ErrInvalidBody))
	var in *timeline.InputError
	if errors.As(err, &in) {
		fmt.Println(in.Field)
	}
	err = s.Follow(context.Background(), 1, 1)
	fmt.Println(errors.Is(err, timeline.ErrSelfFollow))
	// Output:
	// true true
	// body
	// true
}
