/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * list: an intrusive, circular, doubly linked list. A list_t lives inside the structure it
 * links; container_of gets the structure back. A list head is a list_t that is not part of an
 * element. The list never allocates or frees: its owner does, and an element must be removed
 * before it is freed. No locking: whoever owns the head serialises access.
 */
#ifndef RIMECAST_LIST_H
#define RIMECAST_LIST_H

#include <stddef.h>

typedef struct list {
    struct list *prev, *next;
} list_t;

/* The structure of type `type` whose member `member` is at ptr. */
#ifndef container_of
#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

/* A static initialiser for a head: list_t h = LIST_INIT(h); */
#define LIST_INIT(name) { &(name), &(name) }

/* Makes l an empty list (or an unlinked node). */
static inline void list_init(list_t *l)
{
    l->prev = l;
    l->next = l;
}

/* 1 if the head has no elements (or the node is not linked), else 0. */
static inline int list_empty(const list_t *head)
{
    return head->next == head;
}

static inline void list_link(list_t *node, list_t *prev, list_t *next)
{
    node->prev = prev;
    node->next = next;
    prev->next = node;
    next->prev = node;
}

/* Inserts node (not linked anywhere) as the first element of head. */
static inline void list_insert_head(list_t *head, list_t *node)
{
    list_link(node, head, head->next);
}

/* Inserts node (not linked anywhere) as the last element of head. */
static inline void list_insert_tail(list_t *head, list_t *node)
{
    list_link(node, head->prev, head);
}

/* Unlinks node from its list and leaves it as an empty list, so removing it again is harmless. */
static inline void list_remove(list_t *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    list_init(node);
}

/* Moves every element of src, in order, onto dst (an empty head); src is left empty. */
static inline void list_take_all(list_t *dst, list_t *src)
{
    list_init(dst);
    if (list_empty(src))
        return;
    dst->next = src->next;
    dst->prev = src->prev;
    dst->next->prev = dst;
    dst->prev->next = dst;
    list_init(src);
}

/* The element holding the first node of a non-empty head. */
#define list_first_entry(head, type, member) container_of((head)->next, type, member)

/* Iterates pos (a `type *`) over the elements of head, first to last. The loop body must not
 * remove pos; use list_foreach_safe for that. */
#define list_foreach(pos, head, type, member)                                                  \
    for (pos = container_of((head)->next, type, member); &pos->member != (head);                \
         pos = container_of(pos->member.next, type, member))

/* Like list_foreach, but the body may remove (and free) pos; tmp is a second `type *`. */
#define list_foreach_safe(pos, tmp, head, type, member)                                        \
    for (pos = container_of((head)->next, type, member),                                       \
        tmp = container_of(pos->member.next, type, member);                                    \
         &pos->member != (head); pos = tmp, tmp = container_of(tmp->member.next, type, member))

#endif
