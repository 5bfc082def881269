#if !defined(__ILP32__)
#error __ILP32__ not defined
#endif
int main(void) { return 0; }
